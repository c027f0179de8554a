package payload

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	jmespath "github.com/jmespath-community/go-jmespath"
	"github.com/jmespath-community/go-jmespath/pkg/functions"
	"github.com/jmespath-community/go-jmespath/pkg/parsing"
)

// expr is a compiled JMESPath expression with its text.
type expr struct {
	text string
	jp   jmespath.JMESPath
}

// compile compiles text, refusing text that is not valid UTF-8 (a literal
// in it would make a key that is not); what names the setting in the error
// ("key", "hash part").
func compile(what, text string) (e expr, err error) {
	if !utf8.ValidString(text) {
		return expr{}, fmt.Errorf("payload: %s expression %q: not valid UTF-8", what, text)
	}
	defer func() {
		// The library's lexer panics on some input (v1.1.1: a letter
		// followed by a non-ASCII rune).
		if r := recover(); r != nil {
			e = expr{}
			err = fmt.Errorf("payload: %s expression %q: does not parse (%v)", what, text, r)
		}
	}()
	jp, err := jmespath.Compile(text, bounded()...)
	if err != nil {
		return expr{}, fmt.Errorf("payload: %s expression %q: %w", what, text, err)
	}
	if ast, err := parsing.NewParser().Parse(text); err != nil || hasValueProjection(ast) {
		return expr{}, fmt.Errorf("payload: %s expression %q: the object wildcard * yields an object's members in no fixed order (use values(...), which is sorted by member name)", what, text)
	}
	return expr{text: text, jp: jp}, nil
}

// decode parses body for evaluation: false when it is larger than MaxBody,
// not valid UTF-8, not one JSON value, escapes a lone surrogate or holds a
// number out of a double's range. Numbers are float64, except those
// [numbers] keeps as written.
func decode(body []byte) (any, bool) {
	if len(body) > MaxBody || !utf8.Valid(body) || loneSurrogate(body) {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	if len(bytes.TrimLeft(body[dec.InputOffset():], " \t\n\r")) != 0 {
		return nil, false // trailing data
	}
	return numbers(v)
}

// search evaluates e over v; an error or a panic inside the library is
// ok=false, so no input can crash the caller.
func (e expr) search(v any) (out any, ok bool) {
	defer func() {
		if recover() != nil {
			out = nil
			ok = false
		}
	}()
	out, err := e.jp.Search(v)
	if err != nil {
		return nil, false
	}
	return out, true
}

// errInexact is a number past a double's precision given to to_string.
var errInexact = errors.New("a number a double does not keep as written")

// errTooLong is a function call whose result would exceed MaxBody.
var errTooLong = errors.New("result longer than the largest body")

// bounded replaces some of the library's functions. Those whose output
// length the body can choose (pad_left, pad_right: a width; replace: what
// it inserts) refuse a result longer than MaxBody before it is built, so
// that no body makes an evaluation allocate without bound (the other
// functions' results are bounded by their input). Those that list an
// object's members (keys, values, items) list them sorted by name, as RFC
// 8785 orders them, where the library follows Go's map order, which varies
// from one call to the next: a key or a hash must not. to_string refuses a
// number kept as written (see [numbers]), which is no key however spelled.
func bounded() []jmespath.FunctionEntry {
	var out []jmespath.FunctionEntry
	for _, f := range functions.GetDefaultFunctions() {
		switch f.Name {
		case "pad_left", "pad_right":
			f.Handler = guard(f.Handler, padBound)
		case "replace":
			f.Handler = guard(f.Handler, replaceBound)
		case "keys", "values", "items":
			f.Handler = members(f.Name)
		case "to_string":
			f.Handler = refuseInexact(f.Handler)
		default:
			continue
		}
		out = append(out, f)
	}
	return out
}

// hasValueProjection reports whether the expression holds the object
// wildcard, which the library evaluates in Go's map order.
func hasValueProjection(n parsing.ASTNode) bool {
	if n.NodeType == parsing.ASTValueProjection {
		return true
	}
	return slices.ContainsFunc(n.Children, hasValueProjection)
}

// members is keys, values or items over an object, in the order of its
// member names by UTF-16 code units (RFC 8785's order).
func members(name string) jmespath.JpFunction {
	return func(args []any) (any, error) {
		obj, ok := args[0].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: want an object", name)
		}
		names := make([]string, 0, len(obj))
		for k := range obj {
			names = append(names, k)
		}
		slices.SortFunc(names, func(a, b string) int { return slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b))) })
		out := make([]any, len(names))
		for i, k := range names {
			switch name {
			case "keys":
				out[i] = k
			case "values":
				out[i] = obj[k]
			default:
				out[i] = []any{k, obj[k]}
			}
		}
		return out, nil
	}
}

// refuseInexact calls fn unless its argument is a number kept as written.
func refuseInexact(fn jmespath.JpFunction) jmespath.JpFunction {
	return func(args []any) (any, error) {
		if _, ok := args[0].(json.Number); ok {
			return nil, errInexact
		}
		return fn(args)
	}
}

// guard calls fn only when fits says its result fits in MaxBody.
func guard(fn jmespath.JpFunction, fits func(args []any) bool) jmespath.JpFunction {
	return func(args []any) (any, error) {
		if !fits(args) {
			return nil, errTooLong
		}
		return fn(args)
	}
}

// padBound: pad_left(s, width[, pad]) and pad_right are as long as width
// (the pad is one character).
func padBound(args []any) bool {
	w, ok := args[1].(float64)
	return !ok || w <= MaxBody
}

// replaceBound: replace(subject, old, new[, count]) grows by len(new) -
// len(old) per replacement, and an empty old matches between every rune.
func replaceBound(args []any) bool {
	subject, _ := args[0].(string)
	old, _ := args[1].(string)
	repl, _ := args[2].(string)
	if len(repl) <= len(old) {
		return true
	}
	n := strings.Count(subject, old)
	if len(args) > 3 {
		if c, ok := args[3].(float64); ok && c >= 0 && c < float64(n) {
			n = int(c)
		}
	}
	return len(subject)+n*(len(repl)-len(old)) <= MaxBody
}
