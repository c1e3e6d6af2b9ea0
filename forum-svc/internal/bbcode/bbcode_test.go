package bbcode

import (
	"net/url"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

const (
	ext   = ` class="link link--external" rel="nofollow ugc noopener"`
	codeA = `<div class="bbCodeBlock bbCodeBlock--code"><div class="bbCodeBlock-title">Code:</div><div class="bbCodeBlock-content"><pre class="bbCodeCode"><code>`
	codeZ = `</code></pre></div></div>`
	quote = `<blockquote class="bbCodeBlock bbCodeBlock--quote">`
)

func TestRender(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"text", "hello", "hello"},
		{"escaped", `<script>alert("x")</script> & 'y'`, `&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; &amp; &#39;y&#39;`},
		{"entity stays text", "&amp; &#60;", "&amp;amp; &amp;#60;"},
		{"line breaks", "a\nb\r\nc\rd", "a<br/>\nb<br/>\nc<br/>\nd"},
		{"bold", "[b]x[/b]", "<b>x</b>"},
		{"italic", "[i]x[/i]", "<i>x</i>"},
		{"underline", "[u]x[/u]", "<u>x</u>"},
		{"strike", "[s]x[/s]", "<s>x</s>"},
		{"any case", "[B]x[/b] [I]y[/I]", "<b>x</b> <i>y</i>"},
		{"nested", "[b][i]x[/i][/b]", "<b><i>x</i></b>"},
		{"url", "[url]https://example.com/a?b=1&c=2[/url]",
			`<a href="https://example.com/a?b=1&amp;c=2"` + ext + `>https://example.com/a?b=1&amp;c=2</a>`},
		{"url=", "[url=https://example.com/]the [b]site[/b][/url]", `<a href="https://example.com/"` + ext + `>the <b>site</b></a>`},
		{"url= quoted", `[url="http://example.com"]x[/url]`, `<a href="http://example.com"` + ext + `>x</a>`},
		{"url without scheme", "[url]example.com/x[/url]", `<a href="http://example.com/x"` + ext + `>example.com/x</a>`},
		{"url= empty", "[url=https://example.com/x][/url] [email=a@example.com] [/email]",
			`<a href="https://example.com/x"` + ext + `>https://example.com/x</a> <a href="mailto:a@example.com">a@example.com</a>`},
		{"url mailto", "[url=mailto:a@example.com]mail[/url]", `<a href="mailto:a@example.com">mail</a>`},
		{"email", "[email]a.b@example.com[/email]", `<a href="mailto:a.b@example.com">a.b@example.com</a>`},
		{"email=", "[email=a@example.com]write[/email]", `<a href="mailto:a@example.com">write</a>`},
		{"img", "[img]https://example.com/a.png[/img]", `<img src="https://example.com/a.png" class="bbImage" loading="lazy"/>`},
		{"quote", "[quote]x[/quote]", quote + `<div class="bbCodeBlock-content">x</div></blockquote>`},
		{"quote=", `[quote="Bob, post: 12, member: 3"]x[/quote]`,
			quote + `<div class="bbCodeBlock-title">Bob said:</div><div class="bbCodeBlock-content">x</div></blockquote>`},
		{"quote name escaped", `[quote=<i>]x[/quote]`,
			quote + `<div class="bbCodeBlock-title">&lt;i&gt; said:</div><div class="bbCodeBlock-content">x</div></blockquote>`},
		{"quote edges", "[quote]\nx\n[/quote]\ny", quote + `<div class="bbCodeBlock-content">x</div></blockquote>y`},
		{"code", "[code]\n[b]x[/b] <p>\n  y\n[/code]", codeA + "[b]x[/b] &lt;p&gt;\n  y" + codeZ},
		{"code=", "[code=php]$a[/code]", codeA + "$a" + codeZ},
		{"icode", "[icode][i]x[/i][/icode]", `<code class="bbCodeInline">[i]x[/i]</code>`},
		{"list", "[list]\n[*]a\n[*]b\n[/list]", "<ul>\n<li>a</li>\n<li>b</li>\n</ul>"},
		{"list=1", "[list=1][*]a[*][b]b[/b][/list]", "<ol type=\"1\">\n<li>a</li>\n<li><b>b</b></li>\n</ol>"},
		{"list text before items", "[list]x[*]a[/list]", "<ul>\n<li>x</li>\n<li>a</li>\n</ul>"},
		{"item outside a list", "[*]a", "[*]a"},
		{"color", "[color=red]x[/color]", `<span style="color: red">x</span>`},
		{"color hex", "[color=#FF0000]x[/color]", `<span style="color: #ff0000">x</span>`},
		{"color rgb", "[color=rgb(1,2, 3)]x[/color]", `<span style="color: rgb(1, 2, 3)">x</span>`},
		{"size", "[size=4]x[/size]", `<span style="font-size: 15px">x</span>`},
		{"size px", "[size=20px]x[/size]", `<span style="font-size: 20px">x</span>`},
		{"size px bounded", "[size=900px]x[/size] [size=1px]y[/size]", `<span style="font-size: 36px">x</span> <span style="font-size: 8px">y</span>`},
		{"bare url", "see https://example.com/a, then", `see <a href="https://example.com/a"` + ext + `>https://example.com/a</a>, then`},
		{"bare url in url", "[url=https://a.example]https://b.example[/url]", `<a href="https://a.example"` + ext + `>https://b.example</a>`},
		{"bare url in code", "[code]https://example.com[/code]", codeA + "https://example.com" + codeZ},
		{"url in url", "[url=https://a.example][url=https://b.example]x[/url][/url]", `<a href="https://a.example"` + ext + `>x</a>`},
		// Stays text: unknown, unbalanced, or a value the tag may not take.
		{"unknown", "[foo]x[/foo] [b=1]y[/b]", "[foo]x[/foo] [b=1]y[/b]"},
		{"unclosed", "[b]x", "[b]x"},
		{"unopened", "x[/b]", "x[/b]"},
		{"crossed", "[b][i]x[/b][/i]", "<b>[i]x</b>[/i]"},
		{"javascript", "[url=javascript:alert(1)]x[/url]", "[url=javascript:alert(1)]x[/url]"},
		{"javascript any case", "[url]JaVaScRiPt:alert(1)[/url]", "[url]JaVaScRiPt:alert(1)[/url]"},
		{"data", "[url=data:text/html;base64,PHNjcmlwdD4=]x[/url]", "[url=data:text/html;base64,PHNjcmlwdD4=]x[/url]"},
		{"vbscript", "[url=vbscript:x]x[/url]", "[url=vbscript:x]x[/url]"},
		{"relative", "[url=/admin]x[/url] [url=//evil.example]y[/url]", "[url=/admin]x[/url] [url=//evil.example]y[/url]"},
		{"credentials", "[url=https://bank.example@evil.example]x[/url]", "[url=https://bank.example@evil.example]x[/url]"},
		{"quote breaking out", `[url=https://example.com/"onmouseover="alert(1)]x[/url]`,
			`<a href="https://example.com/%22onmouseover=%22alert%281%29"` + ext + `>x</a>`},
		{"img javascript", "[img]javascript:alert(1)[/img]", "[img]javascript:alert(1)[/img]"},
		{"img mailto", "[img]mailto:a@example.com[/img]", "[img]mailto:a@example.com[/img]"},
		{"color expression", "[color=expression(alert(1))]x[/color]", "[color=expression(alert(1))]x[/color]"},
		{"color css injection", "[color=red;background:url(x)]x[/color]", "[color=red;background:url(x)]x[/color]"},
		{"color unknown name", "[color=blurple]x[/color]", "[color=blurple]x[/color]"},
		{"rgb out of range", "[color=rgb(256,0,0)]x[/color]", "[color=rgb(256,0,0)]x[/color]"},
		{"size out of scale", "[size=8]x[/size] [size=-1]y[/size]", "[size=8]x[/size] [size=-1]y[/size]"},
		{"list type", "[list=disc][*]a[/list]", "[list=disc][*]a[/list]"},
		{"email injection", `[email]a@example.com?subject=x[/email]`, `[email]a@example.com?subject=x[/email]`},
		{"lone bracket", "a [ b ] [", "a [ b ] ["},
		{"nul", "a\x00b", "a\uFFFDb"},
	}
	for _, tt := range tests {
		got := render(tt.in)
		if got != tt.want {
			t.Errorf("%s: render(%q)\n got %q\nwant %q", tt.name, tt.in, got, tt.want)
		}
		if final := Render(tt.in); final != got {
			t.Errorf("%s: the policy changed the output:\n%q\n%q", tt.name, got, final)
		}
	}
}

// allowedAttrs are the elements the renderer writes and the attributes each may carry.
var allowedAttrs = map[string]map[string]bool{
	"b": {}, "i": {}, "u": {}, "s": {}, "br": {}, "ul": {}, "li": {}, "pre": {"class": true},
	"code": {"class": true}, "ol": {"type": true}, "span": {"style": true}, "blockquote": {"class": true},
	"div": {"class": true}, "a": {"href": true, "class": true, "rel": true}, "img": {"src": true, "class": true, "loading": true},
	// html.Parse adds these around any fragment.
	"html": {}, "head": {}, "body": {},
}

// attrValues are the only values of the attributes the renderer writes from a fixed set.
var attrValues = map[string]map[string]bool{
	"class": {"link link--external": true, "bbImage": true, "bbCodeBlock bbCodeBlock--quote": true,
		"bbCodeBlock bbCodeBlock--code": true, "bbCodeBlock-title": true, "bbCodeBlock-content": true,
		"bbCodeCode": true, "bbCodeInline": true},
	"rel":     {"nofollow ugc noopener": true},
	"loading": {"lazy": true},
	"type":    {"1": true, "a": true, "A": true, "i": true, "I": true},
}

// checkHTML parses out as a browser would and fails on any element, attribute or attribute value
// the renderer does not write, and on any link whose scheme is not http, https or mailto.
func checkHTML(t *testing.T, in, out string) {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(out))
	if err != nil {
		t.Fatalf("%q: %v", in, err)
	}
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		switch n.Type {
		case html.ElementNode:
			attrs, ok := allowedAttrs[n.Data]
			if !ok {
				t.Fatalf("%q: element <%s> in %q", in, n.Data, out)
			}
			for _, a := range n.Attr {
				if !attrs[a.Key] || a.Namespace != "" {
					t.Fatalf("%q: attribute %s on <%s> in %q", in, a.Key, n.Data, out)
				}
				if want, fixed := attrValues[a.Key]; fixed && !want[a.Val] {
					t.Fatalf("%q: %s=%q on <%s> in %q", in, a.Key, a.Val, n.Data, out)
				}
				if a.Key == "style" && !styleValue.MatchString(a.Val) {
					t.Fatalf("%q: style=%q in %q", in, a.Val, out)
				}
				if a.Key == "href" || a.Key == "src" {
					u, err := url.Parse(a.Val)
					if err != nil || (u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "mailto") {
						t.Fatalf("%q: %s=%q in %q", in, a.Key, a.Val, out)
					}
				}
			}
		case html.CommentNode, html.DoctypeNode:
			t.Fatalf("%q: a comment or doctype in %q", in, out)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
}

// FuzzRender: for any input, the output holds only the renderer's elements and attributes and no
// link of another scheme, and the policy had nothing to remove.
func FuzzRender(f *testing.F) {
	for _, s := range []string{"[b]x[/b]", "[url=javascript:x]y[/url]", "[quote=a][list][*]x[*]y[/list][/quote]",
		"[code]<x>[/code]", "https://e.com/x?<y>", "[color=#abc][size=7]z[/size][/color]", "[img]http://a.b/c[/img]",
		"[email]a@b.cd[/email]", "<img src=x onerror=alert(1)>", "[url]a.b[/url]", "[b][i][/b][/i]\r\n[*]", "[url=http://a.b/%zz]x[/url]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out := render(in)
		checkHTML(t, in, out)
		if final := policy.Sanitize(out); final != out {
			t.Fatalf("%q: the policy changed\n%q\ninto\n%q", in, out, final)
		}
	})
}

// message is a 2,000-character message of the usual kind: paragraphs, some markup, a quote, a
// link, a list.
func message() string {
	var b strings.Builder
	b.WriteString("[quote=\"Bob, post: 12, member: 3\"]Shall we meet on [b]Friday[/b]?[/quote]\n")
	for b.Len() < 1700 {
		b.WriteString("Sure, [i]Friday[/i] works. See https://example.com/plans?day=fri for the [url=https://example.com/map]map[/url].\n")
	}
	b.WriteString("[list]\n[*]bring [color=red]food[/color]\n[*]bring [size=5]drinks[/size]\n[/list]\n")
	s := b.String()
	for len(s) < 2000 {
		s += "ok "
	}
	return s[:2000]
}

func BenchmarkRender(b *testing.B) {
	m := message()
	b.SetBytes(int64(len(m)))
	for b.Loop() {
		Render(m)
	}
}

// BenchmarkRenderOnly is the renderer without the policy: the second wall's share of the cost.
func BenchmarkRenderOnly(b *testing.B) {
	m := message()
	b.SetBytes(int64(len(m)))
	for b.Loop() {
		render(m)
	}
}
