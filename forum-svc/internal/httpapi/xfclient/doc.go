// Package xfclient holds, for its tests, two HTTP clients that oapi-codegen generates: one from
// XenForo 2.3's document of the conversation and attachment operations (package xenforo, from
// ../testdata/xenforo/conversations.json) and one from forum-svc's own document (package forum,
// from ../openapi.json). The tests drive a whole conversation through each against the real
// service, with nothing changed but the base URL and the name of the key headers, and check that
// the generated code is what the pinned generator writes today.
//
// Regenerate both with `go generate ./internal/httpapi/xfclient/...` from forum-svc/.
package xfclient
