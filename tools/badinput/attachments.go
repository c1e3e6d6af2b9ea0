package badinput

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// The bad input of the attachments API: the fields of a new key (type, context), of an upload
// (key, then the file) and of a key's list, each case with one fault and the answer forum-svc's
// README ("Attachments") gives it. User 1's key carries the attachment scopes.

// fieldContext is a new key's conversation.
const fieldContext = "context[conversation_id]"

// withFile is the form as a multipart/form-data body whose last part is a file.
func (f form) withFile(filename, content string) string {
	body := strings.TrimSuffix(f.multipart(), "--"+multipartBoundary+"--\r\n")
	return body + fmt.Sprintf("--%s\r\nContent-Disposition: form-data; name=\"attachment\"; filename=%q\r\nContent-Type: application/octet-stream\r\n\r\n%s\r\n--%s--\r\n",
		multipartBoundary, filename, content, multipartBoundary)
}

// attachmentCases are the bad inputs of the attachments API on the seeded data d.
func attachmentCases(d ForumData, values []value) []Case {
	var cs []Case
	multipartHeader := [][2]string{{"Forum-Api-Key", d.UserKey}, {"Content-Type", "multipart/form-data; boundary=" + multipartBoundary}}
	upload := func(name, target, body string, want ...Outcome) {
		cs = append(cs, Case{Name: "attachments/" + name, Method: http.MethodPost, Target: target, Header: multipartHeader,
			Body: []byte(body), Want: want})
	}
	list := func(name, query string, want ...Outcome) {
		cs = append(cs, Case{Name: "attachments/" + name, Method: http.MethodGet, Target: "/api/attachments/?" + query,
			Header: [][2]string{{"Forum-Api-Key", d.UserKey}}, Want: want})
	}
	id := func(v int64) string { return strconv.FormatInt(v, 10) }
	newKey := form{text("type", "conversation_message")}

	// A new key: its type, its conversation.
	upload("new-key/missing-type", "/api/attachments/new-key", form{}.multipart(), missingInput("type"))
	upload("new-key/type-repeated", "/api/attachments/new-key", form{text("type", "conversation_message"), text("type", "conversation_message")}.multipart(), invalidInput("type"))
	for _, v := range values {
		s := strings.TrimSpace(v.sent())
		if s == "" || s == "conversation_message" || v.RawQuery != "" {
			continue
		}
		upload("new-key/type/"+v.Label, "/api/attachments/new-key", form{field("type", v)}.multipart(), invalidInput("type"))
		if _, err := strconv.ParseInt(s, 10, 64); err != nil && s != "" {
			upload("new-key/context/"+v.Label, "/api/attachments/new-key", newKey.with(fieldContext, field(fieldContext, v)).multipart(), invalidInput(fieldContext))
		}
	}
	for _, c := range []int64{d.Foreign, d.Missing, d.Left} {
		upload("new-key/context-"+id(c), "/api/attachments/new-key", newKey.with(fieldContext, text(fieldContext, id(c))).multipart(), forumConvNotFound)
	}
	upload("new-key/type-1KB+1", "/api/attachments/new-key", form{text("type", strings.Repeat("t", 1025))}.multipart(), invalidInput("type"))

	// An upload: the key first, then the file.
	upload("upload/missing-all", "/api/attachments/", form{}.multipart(), missingInput("key", "attachment"))
	upload("upload/missing-key", "/api/attachments/", form{}.withFile("a.txt", "x"), missingInput("key"))
	upload("upload/key-repeated", "/api/attachments/", form{text("key", strings.Repeat("a", 32)), text("key", strings.Repeat("b", 32))}.withFile("a.txt", "x"), invalidInput("key"))
	for _, k := range []string{strings.Repeat("0", 32), strings.Repeat("A", 32), strings.Repeat("a", 31), "../" + strings.Repeat("a", 29), strings.Repeat("a", 33)} {
		upload("upload/key-"+url.PathEscape(k), "/api/attachments/", form{text("key", k)}.withFile("a.txt", "x"), invalidAttachmentKey)
	}

	// A key's list.
	list("list/missing-key", "", missingInput("key"))
	list("list/key-repeated", "key="+strings.Repeat("a", 32)+"&key="+strings.Repeat("b", 32), invalidInput("key"))
	for _, v := range values {
		if strings.TrimSpace(v.sent()) == "" {
			continue
		}
		list("list/key/"+v.Label, "key="+v.query(), invalidAttachmentKey, invalidInput("key"))
	}
	return cs
}
