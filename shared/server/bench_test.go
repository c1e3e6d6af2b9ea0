package server

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"

	"github.com/labstack/echo/v4"
)

// BenchmarkNewRequestID is the cost of one generated request id (crypto/rand and hex).
func BenchmarkNewRequestID(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = newRequestID()
	}
}

// BenchmarkKeepAlive is one GET on a keep-alive connection through New's middleware, served
// with the framer on every connection (as Serve does) and without it: the difference is the
// framer's cost per request.
func BenchmarkKeepAlive(b *testing.B) {
	for _, framed := range []bool{false, true} {
		name := map[bool]string{false: "unwrapped", true: "framed"}[framed]
		b.Run(name, func(b *testing.B) {
			e := New(Options{Logger: slog.New(slog.DiscardHandler)})
			e.GET("/ok", func(c echo.Context) error { return c.String(http.StatusOK, "ok") })
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			srv := &http.Server{Handler: e, MaxHeaderBytes: maxReadHeaderBytes}
			if framed {
				srv.Handler, srv.ConnContext, srv.DisableGeneralOptionsHandler = judgeFraming(e), connContext, true
				ln = framingListener{ln}
			}
			go func() { _ = srv.Serve(ln) }()
			defer srv.Close()
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
			url := "http://" + ln.Addr().String() + "/ok"
			b.ReportAllocs()
			for b.Loop() {
				res, err := client.Get(url)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
			}
		})
	}
}
