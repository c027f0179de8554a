package order

import (
	"errors"
	"math"
	"testing"
)

func TestParseMoney(t *testing.T) {
	tests := []struct {
		in      string
		digits  int
		want    Money
		wantErr bool
	}{
		{"49.90", 2, Money{4990, 2}, false},
		{"10", 2, Money{1000, 2}, false},
		{"10.5", 2, Money{1050, 2}, false},
		{"0", 2, Money{0, 2}, false},
		{"0.00", 2, Money{0, 2}, false},
		{"0.01", 2, Money{1, 2}, false},
		{"007.50", 2, Money{750, 2}, false},
		{"1500", 0, Money{1500, 0}, false},
		{"92233720368547758.07", 2, Money{math.MaxInt64, 2}, false},
		{"9223372036854775807", 0, Money{math.MaxInt64, 0}, false},
		{"1e3", 2, Money{}, true},
		{"-1.00", 2, Money{}, true},
		{"-0", 2, Money{}, true},
		{"+1.00", 2, Money{}, true},
		{"10.999", 2, Money{}, true},
		{"10.5", 0, Money{}, true},
		{" 10", 2, Money{}, true},
		{"10 ", 2, Money{}, true},
		{"", 2, Money{}, true},
		{"10.", 2, Money{}, true},
		{".5", 2, Money{}, true},
		{".", 2, Money{}, true},
		{"1.2.3", 2, Money{}, true},
		{"1,00", 2, Money{}, true},
		{"1_000", 2, Money{}, true},
		{"NaN", 2, Money{}, true},
		{"Infinity", 2, Money{}, true},
		{"0x10", 2, Money{}, true},
		{"١٠", 2, Money{}, true}, // Arabic-Indic digits
		{"92233720368547758.08", 2, Money{}, true},
		{"9223372036854775808", 0, Money{}, true},
		{"99999999999999999999999999", 2, Money{}, true},
		{"1", -1, Money{}, true},
		{"1", 19, Money{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseMoney(tt.in, tt.digits)
			if tt.wantErr {
				var inv *InvalidError
				if !errors.As(err, &inv) || inv.Reason != ReasonInvalidMoney || inv.Detail == "" {
					t.Fatalf("ParseMoney(%q, %d) = %v, %v; want an invalid-money error", tt.in, tt.digits, got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseMoney(%q, %d) = %v, %v; want %v", tt.in, tt.digits, got, err, tt.want)
			}
		})
	}
}

func TestMoneyString(t *testing.T) {
	tests := []struct {
		in   Money
		want string
	}{
		{Money{9980, 2}, "99.80"},
		{Money{1050, 2}, "10.50"},
		{Money{5, 2}, "0.05"},
		{Money{0, 2}, "0.00"},
		{Money{1500, 0}, "1500"},
		{Money{}, "0"},
		{Money{-5, 2}, "-0.05"},
		{Money{math.MaxInt64, 2}, "92233720368547758.07"},
		{Money{math.MinInt64, 2}, "-92233720368547758.08"},
		{Money{7, 18}, "0.000000000000000007"},
		{Money{7, -1}, "7"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := tt.in.String(); got != tt.want {
				t.Errorf("%#v.String() = %q, want %q", tt.in, got, tt.want)
			}
			if tt.in.Minor < 0 || tt.in.Digits < 0 {
				return
			}
			back, err := ParseMoney(tt.want, tt.in.Digits)
			if err != nil || back != tt.in {
				t.Errorf("ParseMoney(%q, %d) = %v, %v; want the value back", tt.want, tt.in.Digits, back, err)
			}
		})
	}
}

func TestMoneyArithmetic(t *testing.T) {
	tests := []struct {
		name   string
		got    func() (Money, bool)
		want   Money
		wantOK bool
	}{
		{"add", func() (Money, bool) { return Money{4990, 2}.Add(Money{4990, 2}) }, Money{9980, 2}, true},
		{"add different digits", func() (Money, bool) { return Money{1, 2}.Add(Money{1, 0}) }, Money{}, false},
		{"add overflow", func() (Money, bool) { return Money{math.MaxInt64, 2}.Add(Money{1, 2}) }, Money{}, false},
		{"add negative overflow", func() (Money, bool) { return Money{math.MinInt64, 2}.Add(Money{-1, 2}) }, Money{}, false},
		{"add to the limit", func() (Money, bool) { return Money{math.MaxInt64 - 1, 2}.Add(Money{1, 2}) }, Money{math.MaxInt64, 2}, true},
		{"mul", func() (Money, bool) { return Money{4990, 2}.Mul(2) }, Money{9980, 2}, true},
		{"mul zero", func() (Money, bool) { return Money{math.MaxInt64, 2}.Mul(0) }, Money{0, 2}, true},
		{"mul overflow", func() (Money, bool) { return Money{math.MaxInt64/2 + 1, 2}.Mul(2) }, Money{}, false},
		{"mul large overflow", func() (Money, bool) { return Money{1 << 40, 2}.Mul(1 << 40) }, Money{}, false},
		{"mul min by -1", func() (Money, bool) { return Money{math.MinInt64, 2}.Mul(-1) }, Money{}, false},
		{"mul -1 by min", func() (Money, bool) { return Money{-1, 2}.Mul(math.MinInt64) }, Money{}, false},
		{"mul to the limit", func() (Money, bool) { return Money{math.MaxInt64 / 7, 2}.Mul(7) }, Money{math.MaxInt64 / 7 * 7, 2}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := tt.got()
			if ok != tt.wantOK || (ok && got != tt.want) {
				t.Errorf("got %v, %v; want %v, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestCurrencyDigits(t *testing.T) {
	tests := []struct {
		code   string
		want   int
		wantOK bool
	}{
		{"BRL", 2, true}, {"USD", 2, true}, {"EUR", 2, true}, {"GBP", 2, true},
		{"ARS", 2, true}, {"MXN", 2, true}, {"CLP", 0, true}, {"JPY", 0, true},
		{"brl", 0, false}, {"XYZ", 0, false}, {"", 0, false}, {"BRL ", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.code, func(t *testing.T) {
			got, ok := CurrencyDigits(tt.code)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("CurrencyDigits(%q) = %d, %v; want %d, %v", tt.code, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}
