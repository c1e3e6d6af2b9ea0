package httpapi_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"forumstats.local/shared/testutil/browsertest"
)

// eventsPage opens the stream with the ticket of its query string and notes on <body> what
// arrives: data-open once the stream answered, data-got the text of a new message.
const eventsPage = `<!doctype html><html><body><script>
const q = new URLSearchParams(location.search);
const es = new EventSource(q.get("api") + "/api/events?ticket=" + encodeURIComponent(q.get("ticket")));
es.addEventListener("unread_count", () => { document.body.dataset.open = "1"; });
es.addEventListener("message_created", (e) => {
  document.body.dataset.got = JSON.parse(e.data).message.message;
  document.body.dataset.id = e.lastEventId;
});
es.onerror = () => { document.body.dataset.error = "1"; };
</script></body></html>`

// A page of another origin, allowed by CORS_ALLOWED_ORIGINS, opens bob's stream in headless
// Chromium with a ticket; a reply sent through the API arrives on it.
func TestEventStreamInChromium(t *testing.T) {
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(eventsPage))
	}))
	t.Cleanup(page.Close)
	e := newEnv(t, envOptions{databaseURL: "sqlite:" + t.TempDir() + "/forum.db", corsOrigins: []string{page.URL}})
	api := httptest.NewServer(e.h)
	t.Cleanup(api.Close)
	tr := e.post("/api/events/ticket", url.Values{}, key(keyBob))
	if tr.status != http.StatusOK {
		t.Fatalf("ticket: %d %s", tr.status, tr.body)
	}
	ticket := tr.json(t)["ticket"].(string)

	ctx := browsertest.Context(t, "the event stream's browser test")
	ctx, cancelTimeout := context.WithTimeout(ctx, 60*time.Second)
	t.Cleanup(cancelTimeout)
	target := page.URL + "/?" + url.Values{"api": {api.URL}, "ticket": {ticket}}.Encode()
	if err := chromedp.Do(ctx, chromedp.Navigate(target)); err != nil {
		t.Fatalf("chromium: %v", err)
	}
	waitPage := func(what, expr string) {
		t.Helper()
		wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		if _, err := chromedp.Run(wctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(50*time.Millisecond))); err != nil {
			state, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`JSON.stringify(document.body.dataset)`))
			t.Fatalf("the page never had %s (body %s): %v", what, state, err)
		}
	}
	waitPage("its stream open", `document.body.dataset.open === "1"`)
	r := e.post("/api/conversation-messages", url.Values{"conversation_id": {"10"}, "message": {"seen in a browser"}}, key(keyAlice))
	if r.status != http.StatusOK {
		t.Fatalf("reply: %d %s", r.status, r.body)
	}
	waitPage("the reply", `document.body.dataset.got === "seen in a browser"`)
	id, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.dataset.id`))
	if err != nil || strings.TrimSpace(id) == "" {
		t.Fatalf("the event's id as the browser kept it: %q, %v", id, err)
	}
}
