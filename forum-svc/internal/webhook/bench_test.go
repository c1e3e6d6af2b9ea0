package webhook_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"forumstats.local/forum-svc/internal/webhook"
	"forumstats.local/forum-svc/migrations"
	tu "forumstats.local/shared/testutil"
)

// benchDB is a migrated database of the dialect.
func benchDB(b *testing.B, dialect string) *gorm.DB {
	b.Helper()
	if dialect == "postgres" {
		return openBenchDB(b, tu.NewDatabase(b, migrations.Set))
	}
	return openBenchDB(b, "sqlite:"+filepath.Join(b.TempDir(), "forum.db"))
}

// BenchmarkEnqueue is the cost of the outbox in a write's transaction: a transaction of one
// small insert alone ("none"), then with one change enqueued for 0, 1 and 5 subscribed webhooks.
//
//	go test ./internal/webhook -run '^$' -bench Enqueue -benchtime 2000x
func BenchmarkEnqueue(b *testing.B) {
	for _, dialect := range []string{"postgres", "sqlite"} {
		b.Run(dialect, func(b *testing.B) {
			gdb := benchDB(b, dialect)
			if err := gdb.Exec(`CREATE TABLE bench_writes (id INTEGER PRIMARY KEY, v BIGINT)`).Error; err != nil {
				b.Fatal(err)
			}
			hooks, id := 0, 0
			next := func() int { id++; return id }
			for _, c := range []struct {
				name    string
				hooks   int
				enqueue bool
			}{{"none", 0, false}, {"0 webhooks", 0, true}, {"1 webhook", 1, true}, {"5 webhooks", 5, true}} {
				for ; hooks < c.hooks; hooks++ {
					if _, err := webhook.Add(context.Background(), gdb, "https://hooks.example/", []string{"*"},
						"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", time.Now()); err != nil {
						b.Fatal(err)
					}
				}
				b.Run(c.name, func(b *testing.B) {
					for i := 0; b.Loop(); i++ {
						err := gdb.Transaction(func(tx *gorm.DB) error {
							if err := tx.Exec(`INSERT INTO bench_writes (id, v) VALUES (?, ?)`, next(), i).Error; err != nil {
								return err
							}
							if !c.enqueue {
								return nil
							}
							return webhook.Enqueue(tx, []webhook.Change{{Type: "message_created", ConversationID: int64(i % 50), MessageID: int64(i), ActorID: 1, At: 1}}, time.Now())
						})
						if err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		})
	}
}

// BenchmarkDeliveries commits 1,000 changes of 50 conversations, one transaction each, while a
// worker (8 at once) delivers them to a local receiver, and reports deliveries/s and the
// latency from a change's commit to its receipt (p50, p99).
//
//	go test ./internal/webhook -run '^$' -bench Deliveries -benchtime 1x
func BenchmarkDeliveries(b *testing.B) {
	for _, dialect := range []string{"postgres", "sqlite"} {
		b.Run(dialect, func(b *testing.B) {
			for b.Loop() {
				gdb := benchDB(b, dialect)
				const n, convs = 1000, 50
				var mu sync.Mutex
				committed, received := make(map[int64]time.Time, n), make(map[int64]time.Time, n)
				done := make(chan struct{})
				rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					var body struct {
						Data webhook.Data `json:"data"`
					}
					if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
						w.WriteHeader(400)
						return
					}
					mu.Lock()
					if _, again := received[body.Data.MessageID]; !again {
						received[body.Data.MessageID] = time.Now()
						if len(received) == n {
							close(done)
						}
					}
					mu.Unlock()
					w.WriteHeader(204)
				}))
				secret, _ := webhook.NewSecret()
				if _, err := webhook.Add(context.Background(), gdb, rcv.URL, []string{"*"}, secret, time.Now()); err != nil {
					b.Fatal(err)
				}
				w, err := webhook.NewWorker(gdb, idsRenderer{}, webhook.Options{AllowPrivate: true})
				if err != nil {
					b.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				stopped := make(chan struct{})
				go func() { defer close(stopped); w.Run(ctx) }()
				start := time.Now()
				for i := int64(1); i <= n; i++ {
					err := gdb.Transaction(func(tx *gorm.DB) error {
						return webhook.Enqueue(tx, []webhook.Change{{Type: "message_created", ConversationID: i % convs, MessageID: i, ActorID: 1, At: 1}}, time.Now())
					})
					if err != nil {
						b.Fatal(err)
					}
					mu.Lock()
					committed[i] = time.Now()
					mu.Unlock()
				}
				select {
				case <-done:
				case <-time.After(2 * time.Minute):
					b.Fatalf("%d of %d delivered in 2 minutes", len(received), n)
				}
				elapsed := time.Since(start)
				cancel()
				<-stopped
				rcv.Close()
				var lat []time.Duration
				for id, at := range received {
					lat = append(lat, at.Sub(committed[id]))
				}
				slices.Sort(lat)
				b.ReportMetric(float64(n)/elapsed.Seconds(), "deliveries/s")
				b.ReportMetric(float64(lat[len(lat)/2].Milliseconds()), "p50-ms")
				b.ReportMetric(float64(lat[len(lat)*99/100].Milliseconds()), "p99-ms")
			}
		})
	}
}
