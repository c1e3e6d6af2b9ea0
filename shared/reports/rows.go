package reports

import "time"

// Row is a stored report of either kind as both sides read it: its period (day or month) under
// one name. It is what ReportColumns selects.
type Row struct {
	GuildID       string
	Period        string
	GeneratedAt   time.Time
	Status        string
	ErrorCode     *string
	ErrorMessage  *string
	TotalMessages int64
}

// ChannelRow is one channel's count in a stored report of either kind.
type ChannelRow struct {
	GuildID   string
	Period    string
	ChannelID string
	Name      string
	Messages  int64
}

// Tables names where reports of a kind are stored.
type Tables struct {
	Reports  string // daily_reports or monthly_reports
	Channels string // daily_channel_counts or monthly_channel_counts
	Period   string // the period column of both: day or month
}

// Tables of the kind.
func (k Kind) Tables() Tables {
	if k == KindMonth {
		return Tables{Reports: "monthly_reports", Channels: "monthly_channel_counts", Period: "month"}
	}
	return Tables{Reports: "daily_reports", Channels: "daily_channel_counts", Period: "day"}
}

// ReportColumns is the select list that reads a report table of the kind into Row, in Row's
// field order.
func (k Kind) ReportColumns() string {
	return "guild_id, " + k.Tables().Period + " AS period, generated_at, status, error_code, error_message, total_messages"
}

// ChannelColumns is the select list that reads a channel table of the kind into ChannelRow, in
// ChannelRow's field order.
func (k Kind) ChannelColumns() string {
	return "guild_id, " + k.Tables().Period + " AS period, channel_id, name, messages"
}
