// Package answerstest decodes the answers package answers writes, for the assertions of the
// tests that read them: answers' own and the HTTP API's. It mirrors the JSON rather than
// reusing answers' types, so that a renamed field fails the tests; its fields need no tags, as
// encoding/json matches names without regard to case.
package answerstest

// Statistics is the statistics answer; a pointer is nil where the answer leaves the field out
// (or writes null).
type Statistics struct {
	Month          *string
	Period         *string
	From           *string
	To             *string
	Start          *string
	EndExclusive   *string
	Timezone       string
	RefreshMinutes int
	Server         *Server
	Servers        []Server
	TotalServers   *int
	ReadyServers   *int
	TotalMessages  *int64
	Complete       *bool
}

// Server is one server's report in a statistics answer.
type Server struct {
	Number        int
	Name          string
	GuildID       string
	IconURL       *string
	BannerURL     *string
	TotalMessages *int64
	Channels      []Channel
	GeneratedAt   *string
	Status        string
	Error         *Error
}

// Channel is one channel's count in a server's report.
type Channel struct {
	ID       string
	Name     string
	Messages int64
}

// Error is why the collector's last attempt at a report failed.
type Error struct {
	Code    string
	Message string
}

// Series is the series answer.
type Series struct {
	From           string
	To             string
	Timezone       string
	RefreshMinutes int
	Days           []string
	Servers        []SeriesServer
}

// SeriesServer is one server's daily totals in a series answer; Channels is nil where the
// answer leaves them out (all servers).
type SeriesServer struct {
	Number   int
	Name     string
	GuildID  string
	Totals   []*int64
	Statuses []string
	Channels *[]SeriesChannel
}

// SeriesChannel is one channel's daily totals in a one-server series answer.
type SeriesChannel struct {
	ID     string
	Name   string
	Totals []*int64
}
