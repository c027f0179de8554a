package settings

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// A Setting is one environment variable of a function, as its
// configuration table documents it. The four declaration types below
// implement it.
type Setting interface {
	// Row is the setting's line in the function's configuration table.
	Row() Row
}

// Row is one line of a configuration table: the variable, its default as
// written in the environment ("required", "none", or a value) and its doc.
type Row struct {
	Env, Default, Doc string
}

// String declares a text setting. Its zero bounds mean none.
type String struct {
	Env     string
	Default string
	// DefaultDoc states a default that is not a constant ("`CONSUMER_NAME`'s
	// value"); it replaces Default in the table.
	DefaultDoc string
	Required   bool   // the empty value is refused
	MaxBytes   int    // 0: no limit
	Reject     string // characters the value must not contain
	Doc        string
}

// Int declares a whole-number setting, within Min..Max (Max 0: no upper
// bound).
type Int struct {
	Env      string
	Default  int
	Min, Max int
	Doc      string
	Unit     string // how the bound is counted in an error ("messages"); may be ""
}

// Float declares a number setting, within Min..Max.
type Float struct {
	Env      string
	Default  float64
	Min, Max float64
	Doc      string
	Unit     string // how the bound is counted in an error; may be ""
}

// Duration declares a duration setting, written as Go parses it ("10s",
// "720h"), within Min..Max (Max 0: no upper bound). A Min of [AboveZero]
// reads "> 0".
type Duration struct {
	Env      string
	Default  time.Duration
	Min, Max time.Duration
	Doc      string
}

// AboveZero is the Min of a duration that must only be positive.
const AboveZero = time.Nanosecond

// Row implements Setting.
func (s String) Row() Row {
	def := "none"
	switch {
	case s.DefaultDoc != "":
		def = s.DefaultDoc
	case s.Required:
		def = "required"
	case s.Default != "":
		def = "`" + s.Default + "`"
	}
	return Row{Env: s.Env, Default: def, Doc: s.Doc}
}

// Row implements Setting.
func (s Int) Row() Row {
	return Row{Env: s.Env, Default: "`" + strconv.Itoa(s.Default) + "`", Doc: s.Doc}
}

// Row implements Setting.
func (s Float) Row() Row {
	return Row{Env: s.Env, Default: "`" + FormatFloat(s.Default) + "`", Doc: s.Doc}
}

// Row implements Setting.
func (s Duration) Row() Row {
	return Row{Env: s.Env, Default: "`" + FormatDuration(s.Default) + "`", Doc: s.Doc}
}

// Check reports a value the setting refuses, as "ENV=value: want ...", or
// nil. The empty value is refused when the setting is Required, and when it
// has a Default (a Reader never returns it then: a configuration built
// another way must not either).
func (s String) Check(v string) error {
	switch {
	case v == "" && s.Required:
		return fmt.Errorf("%s is required", s.Env)
	case v == "" && s.Default != "":
		return fmt.Errorf("%s is empty (unset, it is %q)", s.Env, s.Default)
	case s.MaxBytes > 0 && len(v) > s.MaxBytes, s.Reject != "" && strings.ContainsAny(v, s.Reject):
		return fmt.Errorf("%s=%q: want %s", s.Env, v, s.Want())
	}
	return nil
}

// Want describes the accepted values of a bounded string ("1..64 bytes
// without '#'"), or "" when any value is accepted.
func (s String) Want() string {
	var w []string
	if s.MaxBytes > 0 {
		lo := 0
		if s.Required || s.Default != "" {
			lo = 1
		}
		w = append(w, fmt.Sprintf("%d..%d bytes", lo, s.MaxBytes))
	}
	for _, r := range s.Reject {
		w = append(w, fmt.Sprintf("without %q", r))
	}
	return strings.Join(w, " ")
}

// Check reports a value outside Min..Max, or nil.
func (s Int) Check(v int) error {
	if v < s.Min || (s.Max != 0 && v > s.Max) {
		return fmt.Errorf("%s=%d: want %s", s.Env, v, s.Want())
	}
	return nil
}

// Want describes the bounds: "1..100", ">= 1".
func (s Int) Want() string {
	w := fmt.Sprintf("%d..%d", s.Min, s.Max)
	if s.Max == 0 {
		w = fmt.Sprintf(">= %d", s.Min)
	}
	if s.Unit != "" {
		w += " " + s.Unit
	}
	return w
}

// Upper is Max, or math.MaxInt32 when Max is 0 (no upper bound): the
// largest value a 32-bit platform (and a CloudFormation number) carries.
func (s Int) Upper() int {
	if s.Max == 0 {
		return math.MaxInt32
	}
	return s.Max
}

// Check reports a value outside Min..Max (NaN included), or nil.
func (s Float) Check(v float64) error {
	if !(v >= s.Min && v <= s.Max) { // NaN fails both
		return fmt.Errorf("%s=%s: want %s", s.Env, FormatFloat(v), s.Want())
	}
	return nil
}

// Want describes the bounds: "0.1..3000 messages per second".
func (s Float) Want() string {
	w := FormatFloat(s.Min) + ".." + FormatFloat(s.Max)
	if s.Unit != "" {
		w += " " + s.Unit
	}
	return w
}

// Check reports a value outside Min..Max, or nil.
func (s Duration) Check(v time.Duration) error {
	if v < s.Min || (s.Max != 0 && v > s.Max) {
		return fmt.Errorf("%s=%s: want %s", s.Env, FormatDuration(v), s.Want())
	}
	return nil
}

// Want describes the bounds: "> 0", ">= 432h", "> 0 and <= 336h".
func (s Duration) Want() string {
	lo := ">= " + FormatDuration(s.Min)
	if s.Min == AboveZero {
		lo = "> 0"
	}
	if s.Max == 0 {
		return lo
	}
	if s.Min == AboveZero {
		return lo + " and <= " + FormatDuration(s.Max)
	}
	return FormatDuration(s.Min) + ".." + FormatDuration(s.Max)
}

// FormatDuration writes d as time.ParseDuration reads it, without zero
// trailing units: "5m", "4h", "1h30m", "720h", "2s", "1.5s".
func FormatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// FormatFloat writes v as strconv.ParseFloat reads it, in its shortest
// form: "50", "0.1", "2.5".
func FormatFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
