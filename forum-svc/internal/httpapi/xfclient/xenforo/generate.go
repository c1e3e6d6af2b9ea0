package xenforo

// The client of XenForo 2.3's conversation and attachment operations, generated from XenForo's
// document (field names and types) by oapi-codegen, pinned here; the test
// TestGeneratedClientsAreCurrent (in ../) runs this line again and fails when client.gen.go
// differs from what it writes.
//go:generate go run github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen@v2.8.2 -config oapi-codegen.yaml -o client.gen.go ../../testdata/xenforo/conversations.json
