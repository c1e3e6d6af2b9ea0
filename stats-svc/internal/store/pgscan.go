package store

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/stdlib"

	"forumstats.local/shared/db"
	"forumstats.local/shared/reports"
	"forumstats.local/stats-svc/internal/answers"
)

// The big scans on PostgreSQL (report rows and channel sums), decoded from pgx's raw column
// values on the view's own connection, inside its transaction. database/sql's pgx adapter boxes
// every column of every row into an interface value: for the 36,600 rows of a 366-day
// all-servers series that was most of the request's Go time (stats-svc/README.md, Queries).
// Repeated texts (guild ids, days, statuses) are interned, so a row costs no allocation but its
// own non-repeating texts.

// rawScan runs query (GORM's ? placeholders, rendered by GORM: db.Statement) on v's connection
// and decodes each row, of want columns, with decode into a slice made for capacity rows.
func rawScan[T any](v view, capacity int, query string, args []any, want int,
	decode func(m *pgtype.Map, f []pgconn.FieldDescription, c [][]byte) (T, error)) ([]T, error) {
	query, args, err := db.Statement(v.tx, query, args...)
	if err != nil {
		return nil, err
	}
	out := make([]T, 0, capacity)
	err = v.conn.Raw(func(driverConn any) error {
		conn, ok := driverConn.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("driver connection is %T, not pgx", driverConn)
		}
		rows, err := conn.Conn().Query(v.tx.Statement.Context, query, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		m, f := conn.Conn().TypeMap(), rows.FieldDescriptions()
		for rows.Next() {
			c := rows.RawValues()
			if len(c) != want {
				return fmt.Errorf("%d columns, want %d", len(c), want)
			}
			r, err := decode(m, f, c)
			if err != nil {
				return err
			}
			out = append(out, r)
		}
		return rows.Err()
	})
	return out, err
}

func rawReports(v view, capacity int, query string, args []any) ([]reports.Row, error) {
	var guilds, periods, statuses interner
	return rawScan(v, capacity, query, args, 7, func(m *pgtype.Map, f []pgconn.FieldDescription, c [][]byte) (reports.Row, error) {
		generated, err := rawTime(m, f[2], c[2])
		if err != nil {
			return reports.Row{}, err
		}
		total, err := rawInt64(m, f[6], c[6])
		return reports.Row{GuildID: guilds.of(c[0]), Period: periods.of(c[1]), GeneratedAt: generated,
			Status: statuses.of(c[3]), ErrorCode: optText(c[4]), ErrorMessage: optText(c[5]), TotalMessages: total}, err
	})
}

func rawChannels(v view, capacity int, query string, args []any) ([]answers.Channel, error) {
	var guilds interner
	return rawScan(v, capacity, query, args, 4, func(m *pgtype.Map, f []pgconn.FieldDescription, c [][]byte) (answers.Channel, error) {
		n, err := rawInt64(m, f[3], c[3])
		return answers.Channel{GuildID: guilds.of(c[0]), ID: string(c[1]), Name: string(c[2]), Messages: n}, err
	})
}

// interner returns one string for equal texts of one column. Rows come in runs (a server's days,
// a day's servers), so the column's previous text is tried before the map.
type interner struct {
	last string
	seen map[string]string
}

func (in *interner) of(b []byte) string {
	if string(b) == in.last {
		return in.last
	}
	s, ok := in.seen[string(b)]
	if !ok {
		if in.seen == nil {
			in.seen = map[string]string{}
		}
		s = string(b)
		in.seen[s] = s
	}
	in.last = s
	return s
}

// optText is a nullable text column (text and binary formats are both its UTF-8 bytes).
func optText(b []byte) *string {
	if b == nil {
		return nil
	}
	s := string(b)
	return &s
}

// pgEpoch is where PostgreSQL's binary timestamps count from.
var pgEpoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// rawTime decodes a NOT NULL timestamptz: binary microseconds since pgEpoch, else through pgx.
func rawTime(m *pgtype.Map, f pgconn.FieldDescription, b []byte) (time.Time, error) {
	if f.Format == pgx.BinaryFormatCode && f.DataTypeOID == pgtype.TimestamptzOID && len(b) == 8 {
		us := int64(binary.BigEndian.Uint64(b))
		return pgEpoch.Add(time.Duration(us) * time.Microsecond).Local(), nil
	}
	var t time.Time
	if err := m.Scan(f.DataTypeOID, f.Format, b, &t); err != nil {
		return t, fmt.Errorf("column %s: %w", f.Name, err)
	}
	return t, nil
}

// rawInt64 decodes a NOT NULL bigint: binary big-endian, else through pgx.
func rawInt64(m *pgtype.Map, f pgconn.FieldDescription, b []byte) (int64, error) {
	if f.Format == pgx.BinaryFormatCode && f.DataTypeOID == pgtype.Int8OID && len(b) == 8 {
		return int64(binary.BigEndian.Uint64(b)), nil
	}
	var n int64
	if err := m.Scan(f.DataTypeOID, f.Format, b, &n); err != nil {
		return 0, fmt.Errorf("column %s: %w", f.Name, err)
	}
	return n, nil
}
