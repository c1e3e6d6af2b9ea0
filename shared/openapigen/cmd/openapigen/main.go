// Command openapigen writes a service's served OpenAPI JSON from its YAML source (see package
// openapigen): `openapigen -o openapi.json openapi/openapi.yaml`, run by `go generate`.
package main

import (
	"flag"
	"fmt"
	"os"

	"forumstats.local/shared/openapigen"
)

func main() {
	out := flag.String("o", "openapi.json", "the JSON document to write")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: openapigen -o openapi.json openapi/openapi.yaml")
		os.Exit(2)
	}
	src, err := os.ReadFile(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	doc, err := openapigen.Generate(src)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", flag.Arg(0), err)
		os.Exit(1)
	}
	if err := os.WriteFile(*out, doc, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
