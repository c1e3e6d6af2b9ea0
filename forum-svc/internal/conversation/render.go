package conversation

import "forumstats.local/forum-svc/internal/bbcode"

// RenderMessage is a message's HTML (message_parsed), rendered from its BB code. The writes
// store it with the message: rendering costs far more than reading (bbcode's BenchmarkRender:
// about 0.8 ms for a 2,000-character message), and a page shows up to 100 messages.
func RenderMessage(text string) string { return bbcode.Render(text) }
