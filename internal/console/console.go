package console

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/strandmq/strand/internal/acl"
	"github.com/strandmq/strand/internal/broker"
)

//go:embed templates/*.html
var templateFS embed.FS

// pageTimeout bounds the group coordinator calls one page makes.
const pageTimeout = 10 * time.Second

// Console serves the pages and the JSON API for one broker.
type Console struct {
	b      *broker.Broker
	logger *slog.Logger
	// pages are rendered for remote clients, actPages (with the action
	// forms and the CSRF token) for loopback ones (guard.go).
	pages    map[string]*template.Template
	actPages map[string]*template.Template
	token    string
	mux      *http.ServeMux
	// history is the groups' lag samples (sampleLoop, until the broker
	// closes).
	history lagHistory
	// authz, when set, limits each request to what its principal may see
	// and do (authz.go).
	authz *acl.Authorizer
}

// New returns the console of b; logger may be nil (slog.Default()).
func New(b *broker.Broker, logger *slog.Logger) (*Console, error) {
	if logger == nil {
		logger = slog.Default()
	}
	c := &Console{b: b, logger: logger, pages: map[string]*template.Template{}, actPages: map[string]*template.Template{},
		token: newToken(), mux: http.NewServeMux()}
	funcs := template.FuncMap{
		"bytes":       humanBytes,
		"pathEsc":     url.PathEscape,
		"queryEsc":    url.QueryEscape,
		"sub":         func(a, b int64) int64 { return a - b },
		"join":        joinIDs,
		"seconds":     humanSeconds,
		"lagChart":    lagChart,
		"args":        templateArgs,
		"plural":      plural,
		"tailRefresh": func() int { return tailRefresh },
		"timestamp":   func(t Time) string { return time.Time(t).UTC().Format("2006-01-02 15:04:05.000Z") },
	}
	for _, set := range []struct {
		pages  map[string]*template.Template
		canAct bool
		token  string
	}{{c.pages, false, ""}, {c.actPages, true, c.token}} {
		funcs["canAct"] = func() bool { return set.canAct }
		funcs["csrf"] = func() string { return set.token }
		for _, page := range []string{"overview", "topic", "records", "topicrecords", "group", "brokers", "error", "dlq", "reset"} {
			t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/cells.html", "templates/"+page+".html")
			if err != nil {
				return nil, fmt.Errorf("console: template %s: %w", page, err)
			}
			set.pages[page] = t
		}
	}
	c.route("overview", "/{$}", "/api/v1/overview", func(ctx context.Context, r *http.Request) (any, error) {
		return c.overview(ctx, r)
	})
	c.api("/api/v1/topics", func(ctx context.Context, r *http.Request) (any, error) {
		o, err := c.overview(ctx, r)
		return map[string]any{"topics": nonNil(o.Topics)}, err
	})
	c.api("/api/v1/groups", func(ctx context.Context, r *http.Request) (any, error) {
		o, err := c.overview(ctx, r)
		return map[string]any{"groups": nonNil(o.Groups)}, err
	})
	c.route("topic", "/topics/{topic}", "/api/v1/topics/{topic}", func(ctx context.Context, r *http.Request) (any, error) {
		if err := c.seeTopic(r, acl.OpDescribe, r.PathValue("topic")); err != nil {
			return nil, err
		}
		d, err := topicDetail(ctx, c.b, r.PathValue("topic"))
		c.filterTopicGroups(r, &d)
		return d, err
	})
	c.route("records", "/topics/{topic}/partitions/{partition}", "/api/v1/topics/{topic}/partitions/{partition}/records",
		func(_ context.Context, r *http.Request) (any, error) {
			if err := c.seeTopic(r, acl.OpRead, r.PathValue("topic")); err != nil {
				return nil, err
			}
			p, err := partitionParam(r)
			if err != nil {
				return nil, err
			}
			rp, err := parseRecordsParams(r)
			if err != nil {
				return nil, err
			}
			return records(c.b, r.PathValue("topic"), p, rp)
		})
	c.route("topicrecords", "/topics/{topic}/records", "/api/v1/topics/{topic}/records",
		func(_ context.Context, r *http.Request) (any, error) {
			if err := c.seeTopic(r, acl.OpRead, r.PathValue("topic")); err != nil {
				return nil, err
			}
			rp, err := parseRecordsParams(r)
			if err != nil {
				return nil, err
			}
			return topicRecords(c.b, r.PathValue("topic"), rp)
		})
	c.api("/api/v1/topics/{topic}/partitions/{partition}/records/{offset}", func(_ context.Context, r *http.Request) (any, error) {
		if err := c.seeTopic(r, acl.OpRead, r.PathValue("topic")); err != nil {
			return nil, err
		}
		return oneRecord(c.b, r)
	})
	c.mux.HandleFunc("GET /topics/{topic}/partitions/{partition}/records/{offset}/value", c.serveValue)
	c.route("brokers", "/brokers", "/api/v1/brokers", func(context.Context, *http.Request) (any, error) {
		return brokers(c.b), nil
	})
	c.route("group", "/groups/{group}", "/api/v1/groups/{group}", func(ctx context.Context, r *http.Request) (any, error) {
		if err := c.seeGroup(r, r.PathValue("group")); err != nil {
			return nil, err
		}
		d, err := groupDetail(ctx, c.b, &c.history, r.PathValue("group"))
		if errors.Is(err, errNotFound) {
			if sd, ok := shareDetail(c.b, r.PathValue("group")); ok {
				return sd, nil
			}
		}
		return d, err
	})
	c.route("dlq", "/topics/{topic}/dlq", "/api/v1/topics/{topic}/dlq", func(_ context.Context, r *http.Request) (any, error) {
		if err := c.seeTopic(r, acl.OpRead, r.PathValue("topic")); err != nil {
			return nil, err
		}
		return dlqView(c.b, r.PathValue("topic"))
	})
	c.topicActions()
	c.groupActions()
	c.action("/actions/topics/{topic}/redrive", c.redrive)
	index := func(context.Context, *http.Request) (any, error) { return apiIndex(), nil }
	c.api("/api/v1", index)
	c.api("/api/v1/{$}", index)
	// Anything else under /api/v1 is a JSON 404 (a script must never be
	// handed an HTML page), and anything else at all the error page.
	c.mux.HandleFunc("/api/v1/", func(w http.ResponseWriter, r *http.Request) {
		c.fail(w, r, fmt.Errorf("%w: no API route %s %s (GET /api/v1 lists them)", errNotFound, r.Method, r.URL.Path), true)
	})
	c.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		c.fail(w, r, fmt.Errorf("%w: no page %s", errNotFound, r.URL.Path), false)
	})
	go c.sampleLoop()
	return c, nil
}

// overview is the front page for the request's principal.
func (c *Console) overview(ctx context.Context, r *http.Request) (Overview, error) {
	o, err := overview(ctx, c.b)
	c.filterOverview(r, &o)
	return o, err
}

// ServeHTTP implements http.Handler.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) { c.mux.ServeHTTP(w, r) }

// route serves one view model as a page at pagePath and as JSON at apiPath.
func (c *Console) route(page, pagePath, apiPath string, view func(context.Context, *http.Request) (any, error)) {
	c.mux.HandleFunc("GET "+pagePath, func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), pageTimeout)
		defer cancel()
		v, err := view(ctx, r)
		if err != nil {
			c.fail(w, r, err, false)
			return
		}
		c.render(w, r, http.StatusOK, page, v)
	})
	c.api(apiPath, view)
}

// api serves one view model as JSON at path.
func (c *Console) api(path string, view func(context.Context, *http.Request) (any, error)) {
	c.mux.HandleFunc("GET "+path, func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), pageTimeout)
		defer cancel()
		v, err := view(ctx, r)
		if err != nil {
			c.fail(w, r, err, true)
			return
		}
		writeJSON(w, http.StatusOK, v)
	})
}

// APIRoute is one entry of the API's index (GET /api/v1).
type APIRoute struct {
	Path        string `json:"path"`
	Description string `json:"description"`
}

func apiIndex() map[string][]APIRoute {
	return map[string][]APIRoute{"routes": {
		{"/api/v1/overview", "cluster, topics and groups with totals"},
		{"/api/v1/topics", "every topic"},
		{"/api/v1/topics/{topic}", "a topic: partitions, configs, ingest counters"},
		{"/api/v1/topics/{topic}/partitions/{partition}/records", "a page of a partition's records (offset, timestamp, limit, key, value, header)"},
		{"/api/v1/topics/{topic}/partitions/{partition}/records/{offset}", "one record, its value whole"},
		{"/api/v1/topics/{topic}/records", "a page of a topic's records over all partitions (from, timestamp, limit, key, value, header)"},
		{"/api/v1/topics/{topic}/dlq", "a validated topic's dead letters grouped by reason"},
		{"/api/v1/groups", "every consumer group"},
		{"/api/v1/groups/{group}", "a group: members, committed offsets, lag"},
		{"/api/v1/brokers", "the brokers and the metadata quorum"},
	}}
}

// nonNil makes an empty list JSON [] rather than null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// fail answers an error: 404 for what does not exist, 400 for a bad query,
// 500 (logged) for anything else.
func (c *Console) fail(w http.ResponseWriter, r *http.Request, err error, api bool) {
	status := http.StatusInternalServerError
	switch {
	case errors.Is(err, errNotFound):
		status = http.StatusNotFound
	case errors.Is(err, errBadRequest):
		status = http.StatusBadRequest
	case errors.Is(err, errForbidden):
		status = http.StatusForbidden
	case errors.Is(err, errConflict):
		status = http.StatusConflict
	default:
		c.logger.Warn("console: request failed", "path", r.URL.Path, "err", err)
	}
	if api {
		writeJSON(w, status, map[string]string{"error": err.Error()})
		return
	}
	c.render(w, r, status, "error", map[string]any{"Status": status, "Error": err.Error()})
}

func (c *Console) render(w http.ResponseWriter, r *http.Request, status int, page string, v any) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'")
	w.WriteHeader(status)
	pages := c.pages
	if loopback(r) {
		pages = c.actPages
	}
	if err := pages[page].Execute(w, v); err != nil {
		c.logger.Warn("console: render", "page", page, "err", err)
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// humanSeconds renders a time lag: "0s", "850ms", "12.3s", "4m05s", "3h20m".
func humanSeconds(s float64) string {
	d := time.Duration(s * float64(time.Second))
	switch {
	case d <= 0:
		return "0s"
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

// plural writes a count and its noun: "1 record", "2 records".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// templateArgs makes a map of name, value pairs: arguments for a
// template called with one value.
func templateArgs(kv ...any) (map[string]any, error) {
	if len(kv)%2 != 0 {
		return nil, errors.New("args: want name, value pairs")
	}
	m := make(map[string]any, len(kv)/2)
	for i := 0; i < len(kv); i += 2 {
		name, ok := kv[i].(string)
		if !ok {
			return nil, fmt.Errorf("args: name %v is not a string", kv[i])
		}
		m[name] = kv[i+1]
	}
	return m, nil
}

// joinIDs writes node ids as "1, 2, 3".
func joinIDs(ids []int32) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.Itoa(int(id))
	}
	return strings.Join(parts, ", ")
}
