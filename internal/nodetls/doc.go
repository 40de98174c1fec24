// Package nodetls is the mutual TLS between the nodes of a cluster: which
// certificate names which node, the cluster's certificate authority and
// this node's key pair read from files and reloaded when they change, and
// the tls.Config every inter-node listener and dialer uses, which refuses
// a peer whose certificate the cluster CA did not sign or that names no
// node (or, when dialling a known node, names another).
//
// It knows no Kafka, Raft or topics: callers wrap their own connections.
package nodetls
