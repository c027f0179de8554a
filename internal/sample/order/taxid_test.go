package order

import (
	"strings"
	"testing"
)

func TestValidCPF(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"529.982.247-25", true},
		{"52998224725", true},
		{"123.456.789-09", true},
		{"12345678909", true},
		{"111.444.777-35", true},
		{" 123 456 789 09 ", true},
		{"123/456/789-09", true},
		{"529.982.247-26", false}, // second check digit wrong
		{"529.982.247-15", false}, // first check digit wrong
		{"123.456.789-00", false},
		{"111.111.111-11", false}, // all same digit (check digits happen to match)
		{"000.000.000-00", false},
		{"99999999999", false},
		{"1234567890", false},   // 10 digits
		{"123456789091", false}, // 12 digits
		{"123.456.789-0a", false},
		{"123.456.789_09", false},
		{"１23.456.789-09", false}, // full-width digit
		{"", false},
		{"...---", false},
		{"11.222.333/0001-81", false}, // a CNPJ
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := ValidCPF(tt.in); got != tt.want {
				t.Errorf("ValidCPF(%q) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

// refCNPJ completes a 12-character CNPJ base with its two check digits, the
// plain way, as a reference independent of ValidCNPJ.
func refCNPJ(base string) string {
	dv := func(s string, weights []int) string {
		sum := 0
		for i, w := range weights {
			sum += (int(s[i]) - 48) * w
		}
		r := sum % 11
		if r < 2 {
			return "0"
		}
		return string(rune('0' + 11 - r))
	}
	d1 := dv(base, []int{5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2})
	d2 := dv(base+d1, []int{6, 5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2})
	return base + d1 + d2
}

func TestRefCNPJ(t *testing.T) {
	// Anchor the reference to published values before trusting it.
	tests := []struct{ base, want string }{
		{"112223330001", "11222333000181"},
		{"12ABC34501DE", "12ABC34501DE35"},
	}
	for _, tt := range tests {
		t.Run(tt.base, func(t *testing.T) {
			if got := refCNPJ(tt.base); got != tt.want {
				t.Errorf("refCNPJ(%q) = %q, want %q", tt.base, got, tt.want)
			}
		})
	}
}

func TestValidCNPJ(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		// Numeric, known valid.
		{"11.222.333/0001-81", true},
		{"11222333000181", true},
		{"11 222 333 0001 81", true},
		{"04.252.011/0001-10", true},
		{"33.000.167/0001-01", true},
		// Alphanumeric: the published example, in every spelling.
		{"12.ABC.345/01DE-35", true},
		{"12ABC34501DE35", true},
		{"12.abc.345/01de-35", true}, // lower case is upper-cased
		// Alphanumeric, computed by the reference.
		{refCNPJ("ABCDEFGHIJKL"), true},
		{refCNPJ("ZZZZZZZZZZZZ"), true},
		{refCNPJ("A00000000001"), true},
		{refCNPJ("9X8Y7Z6W5V4U"), true},
		{refCNPJ("0000000000A0"), true},
		// Wrong check digits.
		{"11.222.333/0001-82", false},
		{"11.222.333/0001-91", false},
		{"12.ABC.345/01DE-36", false},
		{"12.ABD.345/01DE-35", false},
		// Wrong length.
		{"11.222.333/0001-8", false},
		{"11.222.333/0001-811", false},
		{"1222333000181", false},
		{"", false},
		// Bad characters.
		{"12.ABC.345/01DE-3A", false}, // letter in a check digit
		{"12.AB#.345/01DE-35", false},
		{"12.AB_.345/01DE-35", false},
		{"12.ABÇ.345/01DE-35", false},
		{"12.AB@.345/01DE-35", false}, // '@' is 'A'-1
		{"12.AB[.345/01DE-35", false}, // '[' is 'Z'+1
		{"12.AB:.345/01DE-35", false}, // ':' is '9'+1
		// All the same digit.
		{"00.000.000/0000-00", false},
		{"11.111.111/1111-11", false},
		{"99999999999999", false},
		// A CPF.
		{"529.982.247-25", false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := ValidCNPJ(tt.in); got != tt.want {
				t.Errorf("ValidCNPJ(%q) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

func TestValidCNPJAgreesWithReference(t *testing.T) {
	const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	for i := range 500 {
		var b strings.Builder
		for j := range 12 {
			b.WriteByte(alphabet[(i*7+j*13+i*j)%len(alphabet)])
		}
		base := b.String()
		valid := refCNPJ(base)
		if !ValidCNPJ(valid) && strings.Count(valid, valid[:1]) != len(valid) {
			t.Errorf("ValidCNPJ(%q) = false, want true", valid)
		}
		wrong := valid[:13] + string(rune('0'+(valid[13]-'0'+1)%10))
		if ValidCNPJ(wrong) {
			t.Errorf("ValidCNPJ(%q) = true with a wrong check digit", wrong)
		}
	}
}

func TestValidTaxID(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"529.982.247-25", true},
		{"11.222.333/0001-81", true},
		{"12.ABC.345/01DE-35", true},
		{"529.982.247-26", false},
		{"11.222.333/0001-80", false},
		{"ABC", false},
		{"", false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := ValidTaxID(tt.in); got != tt.want {
				t.Errorf("ValidTaxID(%q) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}
