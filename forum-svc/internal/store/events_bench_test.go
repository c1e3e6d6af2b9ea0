package store_test

import (
	"context"
	"testing"

	"forumstats.local/forum-svc/internal/conversation"
)

// BenchmarkReplyEventLog measures what the event log adds to a reply (a conversation of 5
// participants, so five log rows and five counter rows a reply) on both databases:
// go test -run '^$' -bench BenchmarkReplyEventLog -count 5 ./forum-svc/internal/store/
func BenchmarkReplyEventLog(b *testing.B) {
	for _, dialect := range []string{"sqlite", "postgres"} {
		for _, logged := range []bool{false, true} {
			name := dialect + "/without"
			if logged {
				name = dialect + "/with-event-log"
			}
			b.Run(name, func(b *testing.B) {
				st, _ := reactStore(b, dialect, 5)
				if logged {
					st.AddRecorder(st.EventLog())
				}
				ctx := context.Background()
				answer := func(conversation.MessageRow, conversation.ConversationRow) ([]byte, error) { return nil, nil }
				b.ResetTimer()
				for b.Loop() {
					if _, err := st.Reply(ctx, conversation.NewReply{ConversationID: 10, UserID: 2, Message: "m", Parsed: "m",
						Date: 1_800_000_100}, nil, answer); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
