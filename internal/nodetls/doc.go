// Package nodetls is the mutual TLS between the nodes of a cluster: which
// certificate names which node (identity.go), the cluster's certificate
// authority and this node's key pair read from files and reloaded when they
// change (Source), and the handshakes every inter-node listener and dialer
// uses, which refuse a peer whose certificate the cluster CA did not sign or
// that names no node (or, when dialling a known node, names another), log
// each refusal once per peer and reason, and close a connection when either
// side's certificate expires (Conn). ListenerTLS is the same reloading for
// the client-facing listeners' certificates.
//
// It knows no Kafka, Raft or topics: callers wrap their own connections.
// Everything here is safe for concurrent use.
package nodetls
