package metrics

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/broker"
	"github.com/strandmq/strand/internal/kafka"
)

// Metrics is one broker's Prometheus registry. It implements
// kafka.Observer: pass it as kafka.Config.Observer.
type Metrics struct {
	b        *broker.Broker
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	failures *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	// byKey caches the per-API children, so observing a request does not
	// look labels up in a map under a lock.
	byKey [maxAPIKey + 1]apiMetrics
	// listener, once ObserveListener is called (before Handler serves).
	listener Listener
}

type apiMetrics struct {
	requests, failures prometheus.Counter
	latency            prometheus.Observer
}

// maxAPIKey bounds the API keys cached; larger keys are looked up.
const maxAPIKey = 127

var _ kafka.Observer = (*Metrics)(nil)

// latencyBuckets span a sub-millisecond metadata request to a fetch long
// poll (fetch.max.wait.ms is at most a few seconds).
var latencyBuckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// New returns metrics reading from b. Call ObserveListener once the wire
// server exists.
func New(b *broker.Broker) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry(), b: b}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "strand_requests_total", Help: "Kafka requests handled, by API.",
	}, []string{"api"})
	m.failures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "strand_request_errors_total", Help: "Kafka requests that failed and closed their connection, by API.",
	}, []string{"api"})
	m.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "strand_request_duration_seconds", Help: "Time to handle a Kafka request and encode its response, by API.",
		Buckets: latencyBuckets,
	}, []string{"api"})
	for key := range m.byKey {
		name := kmsg.NameForKey(int16(key))
		if name == "Unknown" || name == "" || !kafka.Served(int16(key)) {
			continue // an API Strand does not serve gets no empty series
		}
		m.byKey[key] = apiMetrics{
			requests: m.requests.WithLabelValues(name),
			failures: m.failures.WithLabelValues(name),
			latency:  m.latency.WithLabelValues(name),
		}
	}
	m.reg.MustRegister(m.requests, m.failures, m.latency,
		&brokerCollector{b: b, scrapeTimeout: 5 * time.Second},
		&tieredCollector{b: b}, // tiered.go
		&shareCollector{b: b},
		&reassignCollector{b: b}, // reassign.go
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return m
}

// Request implements kafka.Observer.
func (m *Metrics) Request(key int16, elapsed time.Duration, failed bool) {
	var a apiMetrics
	if key >= 0 && int(key) < len(m.byKey) {
		a = m.byKey[key]
	}
	if a.requests == nil {
		name := kmsg.NameForKey(key)
		a = apiMetrics{m.requests.WithLabelValues(name), m.failures.WithLabelValues(name), m.latency.WithLabelValues(name)}
	}
	a.requests.Inc()
	a.latency.Observe(elapsed.Seconds())
	if failed {
		a.failures.Inc()
	}
}

// Listener is what the Kafka listener reports (kafka.Server).
type Listener interface {
	Connections() int
	AcceptErrors() uint64
	RefusedConnections() uint64
	ConnectionRateWaits() uint64
	QueuedRequestBytes() (now, peak int64)
	// AcceptHealth is nil while the listener accepts connections.
	AcceptHealth() error
}

// ObserveListener exports the listener's connections, accept errors and
// queued request bytes, read at scrape time, and makes /healthz fail while
// it cannot accept connections.
func (m *Metrics) ObserveListener(l Listener) {
	m.listener = l
	m.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "strand_connections", Help: "Open Kafka client connections.",
		}, func() float64 { return float64(l.Connections()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "strand_accept_errors_total", Help: "Times the Kafka listener failed to accept a connection (most often: out of file descriptors); it retries with backoff.",
		}, func() float64 { return float64(l.AcceptErrors()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "strand_connections_refused_total", Help: "Connections closed on arrival by max.connections, max.connections.per.ip or the per-IP connection creation rate.",
		}, func() float64 { return float64(l.RefusedConnections()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "strand_connection_creation_throttled_total", Help: "Times max.connection.creation.rate made the Kafka listener wait before accepting the next connection.",
		}, func() float64 { return float64(l.ConnectionRateWaits()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "strand_request_bytes_queued", Help: "Bytes of large requests being read or waiting to be handled (bounded by queued.max.request.bytes).",
		}, func() float64 { now, _ := l.QueuedRequestBytes(); return float64(now) }),
	)
}

// ObserveCertificate exports when a certificate expires, read at scrape
// time so a reloaded certificate shows at once; name says which
// ("inter-node", "inter-node-ca").
func (m *Metrics) ObserveCertificate(name string, notAfter func() time.Time) {
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name:        "strand_tls_certificate_expiry_timestamp_seconds",
		Help:        "When a certificate this node presents or trusts expires (Unix seconds); alert well before it, and renew by replacing the files (they are reloaded).",
		ConstLabels: prometheus.Labels{"certificate": name},
	}, func() float64 { return float64(notAfter().Unix()) }))
}

// Registry returns the registry, to gather from or add to.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves /metrics (the Prometheus text format) and /healthz: 200
// "ok" while the broker serves, 503 naming the partitions that refuse
// appends after a failed fsync (a restart recovers them), so a liveness
// probe restarts a broker whose disk failed it.
func (m *Metrics) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if m.listener != nil {
			if err := m.listener.AcceptHealth(); err != nil {
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = w.Write([]byte("unhealthy: the Kafka listener cannot accept connections: " + err.Error() + "\n"))
				return
			}
		}
		if m.b.Fenced() {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte("unhealthy: this node is fenced: the cluster's controller has not heard from it within a session (is the metadata quorum reachable?); it serves no partition\n"))
			return
		}
		if off := m.b.OfflinePartitions(); len(off) > 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
			lines := []string{"unhealthy: offline partitions (a failed fsync: restart to recover; damaged data: see docs/OPERATIONS.md):"}
			for _, o := range off {
				lines = append(lines, o.Name+": "+o.Reason)
			}
			_, _ = w.Write([]byte(strings.Join(lines, "\n") + "\n"))
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	return mux
}

// scrapeContext bounds the broker reads of one scrape.
func scrapeContext(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}
