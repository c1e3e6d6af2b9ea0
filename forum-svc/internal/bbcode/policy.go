package bbcode

import (
	"regexp"

	"github.com/microcosm-cc/bluemonday"
)

// policy is the second wall: it allows exactly the elements and attributes the renderer writes,
// each attribute with exactly the values it writes, and links to http, https and mailto only.
// Whatever else reached it (a renderer bug) would be removed; the tests hold that it never has
// anything to remove.
var policy = newPolicy()

func newPolicy() *bluemonday.Policy {
	p := bluemonday.NewPolicy()
	p.RequireParseableURLs(true)
	p.AllowRelativeURLs(false)
	p.AllowURLSchemes("http", "https", "mailto")
	p.AllowNoAttrs().OnElements("b", "i", "u", "s", "br", "ul", "li", "pre", "code")
	p.AllowElements("b", "i", "u", "s", "br", "ul", "li", "pre", "code")
	p.AllowAttrs("href").OnElements("a")
	p.AllowAttrs("class").Matching(regexp.MustCompile(`^link link--external$`)).OnElements("a")
	p.AllowAttrs("rel").Matching(regexp.MustCompile(`^nofollow ugc noopener$`)).OnElements("a")
	p.AllowAttrs("src").OnElements("img")
	p.AllowAttrs("class").Matching(regexp.MustCompile(`^bbImage$`)).OnElements("img")
	p.AllowAttrs("loading").Matching(regexp.MustCompile(`^lazy$`)).OnElements("img")
	p.AllowAttrs("style").Matching(styleValue).OnElements("span")
	p.AllowAttrs("class").Matching(regexp.MustCompile(`^bbCodeBlock bbCodeBlock--quote$`)).OnElements("blockquote")
	p.AllowAttrs("class").Matching(regexp.MustCompile(`^(?:bbCodeBlock bbCodeBlock--code|bbCodeBlock-title|bbCodeBlock-content)$`)).OnElements("div")
	p.AllowAttrs("class").Matching(regexp.MustCompile(`^bbCodeCode$`)).OnElements("pre")
	p.AllowAttrs("class").Matching(regexp.MustCompile(`^bbCodeInline$`)).OnElements("code")
	p.AllowAttrs("type").Matching(regexp.MustCompile(`^[1aAiI]$`)).OnElements("ol")
	return p
}

// styleValue is a span's style as the renderer writes it: a colour or a font size.
var styleValue = regexp.MustCompile(`^(?:color: (?:[a-z]+|#[0-9a-fA-F]{3}|#[0-9a-fA-F]{6}|rgb\(\d{1,3}, \d{1,3}, \d{1,3}\))|font-size: \d{1,2}px)$`)
