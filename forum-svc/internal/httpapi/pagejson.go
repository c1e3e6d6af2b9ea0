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

// flatEncoder appends a struct of int64, string and bool fields (int64 ones may be omitempty), of
// nested structs of the same, and of omitempty pointers that are nil and omitempty slices that
// are empty (a message's Attachments: most messages have none), as encoding/json does. Its
// plan is made once from the struct's fields and json tags; a struct it cannot plan (another
// field type, an embedded struct, an omitempty field before any field always written) leaves
// every call to encoding/json (ok false).
type flatEncoder[T any] struct {
	fields []flatField
	ok     bool
}

// flatField is one step of the plan: key is written before the value (`"name":`, after a comma
// unless it is the first field of its object; a nested object's `{` follows it); kind
// reflect.Struct writes key alone (a nested object's opening or closing).
type flatField struct {
	offset    uintptr // in T
	key       string
	kind      reflect.Kind
	omitEmpty bool // an int64 written only when not 0
}

func newFlatEncoder[T any]() flatEncoder[T] {
	fields, ok := planFlat(reflect.TypeFor[T](), 0, nil)
	if !ok {
		return flatEncoder[T]{}
	}
	return flatEncoder[T]{fields: fields, ok: true}
}

// planFlat appends the plan of struct t at offset base to fields.
func planFlat(t reflect.Type, base uintptr, fields []flatField) ([]flatField, bool) {
	written := false
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			return nil, false
		}
		tag := f.Tag.Get("json")
		if !f.IsExported() || tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		opts = "," + opts + ","
		key, err := json.Marshal(name)
		if err != nil {
			return nil, false
		}
		omit := opts == ",omitempty,"
		if f.Type.Kind() == reflect.Struct && opts == ",," && !hasMarshaler(f.Type) {
			if written {
				key = append([]byte{','}, key...)
			}
			written = true
			fields = append(fields, flatField{key: string(key) + ":{", kind: reflect.Struct})
			var ok bool
			if fields, ok = planFlat(f.Type, base+f.Offset, fields); !ok {
				return nil, false
			}
			fields = append(fields, flatField{key: "}", kind: reflect.Struct})
			continue
		}
		if !plainField(f.Type, opts) {
			return nil, false
		}
		// Pointers and slices are never written (nil or empty, or the call gives up), so they
		// need no comma. An
		// omitempty int64 takes its comma from a field always written before it.
		switch {
		case f.Type.Kind() == reflect.Pointer, f.Type.Kind() == reflect.Slice:
		case omit && !written:
			return nil, false
		case omit:
			key = append([]byte{','}, key...)
		default:
			if written {
				key = append([]byte{','}, key...)
			}
			written = true
		}
		fields = append(fields, flatField{offset: base + f.Offset, key: string(key) + ":", kind: f.Type.Kind(),
			omitEmpty: omit && f.Type.Kind() == reflect.Int64})
	}
	return fields, true
}

var (
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
)

// hasMarshaler tells whether t or *t encodes itself.
func hasMarshaler(t reflect.Type) bool {
	return t.Implements(jsonMarshaler) || t.Implements(textMarshaler) ||
		reflect.PointerTo(t).Implements(jsonMarshaler) || reflect.PointerTo(t).Implements(textMarshaler)
}

// plainField tells whether flatEncoder writes a field of type t with the json options opts
// (",a,b,") as encoding/json does: an int64 (omitempty or not), string or bool without options
// or methods of its own, or an omitempty pointer or slice (written only when nil or empty, that
// is never).
func plainField(t reflect.Type, opts string) bool {
	if hasMarshaler(t) {
		return false
	}
	switch t.Kind() {
	case reflect.Int64:
		return opts == ",," || opts == ",omitempty,"
	case reflect.String, reflect.Bool:
		return opts == ",,"
	case reflect.Pointer, reflect.Slice:
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
		switch f.kind {
		case reflect.Pointer:
			if *(*unsafe.Pointer)(p) != nil {
				return b, false
			}
			continue // omitempty
		case reflect.Slice:
			// Any slice's header starts with its pointer and length, as []struct{}'s does.
			if len(*(*[]struct{})(p)) != 0 {
				return b, false
			}
			continue // omitempty
		case reflect.Struct:
			b = append(b, f.key...)
			continue
		case reflect.Int64:
			if f.omitEmpty && *(*int64)(p) == 0 {
				continue
			}
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
