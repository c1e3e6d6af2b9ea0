package httpapi

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
	"unsafe"

	"forumstats.local/forum-svc/internal/conversation"
)

// The message list is the hot response. It is encoded into a pooled buffer by appendMessagePage,
// which writes exactly the bytes encoding/json writes for conversation.MessagePage
// (pagejson_test.go compares the two) without encoding/json's per-call reflection and buffer:
// +9.6 % of the page rate and 4-13 % less CPU a request against encoding/json (forum-svc/README.md).
// The fields and their order come from the structs' json tags, read once (flatEncoder): the
// structs stay the one description of the response.

// bufPool holds response buffers. A page of 100 long messages can be large; buffers that grew past
// maxPooledBuf are left to the GC so that one huge page does not pin memory.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 8<<10); return &b }}

const maxPooledBuf = 256 << 10

func getBuf() *[]byte { return bufPool.Get().(*[]byte) }

func putBuf(b *[]byte) {
	if cap(*b) > maxPooledBuf {
		return
	}
	*b = (*b)[:0]
	bufPool.Put(b)
}

var (
	messageEncoder    = newFlatEncoder[conversation.Message]()
	paginationEncoder = newFlatEncoder[conversation.Pagination]()
)

// appendMessagePage appends p as encoding/json would marshal it. ok is false if p holds something
// this encoder does not write (a message with an embedded conversation); the caller then uses
// encoding/json.
func appendMessagePage(b []byte, p *conversation.MessagePage) (_ []byte, ok bool) {
	b = append(b, `{"messages":`...)
	if p.Messages == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range p.Messages {
			if i > 0 {
				b = append(b, ',')
			}
			if b, ok = messageEncoder.append(b, &p.Messages[i]); !ok {
				return b, false
			}
		}
		b = append(b, ']')
	}
	b = append(b, `,"pagination":`...)
	if b, ok = paginationEncoder.append(b, &p.Pagination); !ok {
		return b, false
	}
	return append(b, '}'), true
}

// flatEncoder appends a struct of int64, string and bool fields, and of omitempty pointers that
// are nil, as encoding/json does. Its plan is made once from the struct's fields and json tags; a
// struct it cannot plan (another field type, an embedded struct) leaves every call to
// encoding/json (ok false).
type flatEncoder[T any] struct {
	fields []flatField
	ok     bool
}

type flatField struct {
	offset uintptr // in T
	key    string  // `"name":`, after a comma unless it is the first field written
	kind   reflect.Kind
}

func newFlatEncoder[T any]() flatEncoder[T] {
	t := reflect.TypeFor[T]()
	var e flatEncoder[T]
	written := false
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			return flatEncoder[T]{}
		}
		tag := f.Tag.Get("json")
		if !f.IsExported() || tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		if !plainField(f.Type, ","+opts+",") {
			return flatEncoder[T]{}
		}
		key, err := json.Marshal(name)
		if err != nil {
			return flatEncoder[T]{}
		}
		// Pointers are never written (nil, or the call gives up), so they need no comma.
		if f.Type.Kind() != reflect.Pointer {
			if written {
				key = append([]byte{','}, key...)
			}
			written = true
		}
		e.fields = append(e.fields, flatField{offset: f.Offset, key: string(key) + ":", kind: f.Type.Kind()})
	}
	e.ok = true
	return e
}

var (
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
)

// plainField tells whether flatEncoder writes a field of type t with the json options opts
// (",a,b,") as encoding/json does: an int64, string or bool without options or methods of its
// own, or an omitempty pointer (written only when nil, that is never).
func plainField(t reflect.Type, opts string) bool {
	if t.Implements(jsonMarshaler) || t.Implements(textMarshaler) ||
		reflect.PointerTo(t).Implements(jsonMarshaler) || reflect.PointerTo(t).Implements(textMarshaler) {
		return false
	}
	switch t.Kind() {
	case reflect.Int64, reflect.String, reflect.Bool:
		return opts == ",,"
	case reflect.Pointer:
		return opts == ",omitempty,"
	}
	return false
}

// append reads the fields at their offsets, whose types the plan checked against T: no
// reflection per call.
func (e *flatEncoder[T]) append(b []byte, v *T) (_ []byte, ok bool) {
	if !e.ok {
		return b, false
	}
	b = append(b, '{')
	for _, f := range e.fields {
		p := unsafe.Add(unsafe.Pointer(v), f.offset)
		if f.kind == reflect.Pointer {
			if *(*unsafe.Pointer)(p) != nil {
				return b, false
			}
			continue // omitempty
		}
		b = append(b, f.key...)
		switch f.kind {
		case reflect.Int64:
			b = strconv.AppendInt(b, *(*int64)(p), 10)
		case reflect.String:
			b = appendJSONString(b, *(*string)(p))
		case reflect.Bool:
			b = strconv.AppendBool(b, *(*bool)(p))
		}
	}
	return append(b, '}'), true
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string the way encoding/json.Marshal does: HTML-safe
// (<, > and & as \u003c, \u003e, \u0026), control characters escaped, invalid UTF-8 replaced by
// \ufffd, and U+2028 and U+2029 escaped.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
