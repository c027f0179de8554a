package order

import (
	"fmt"
	"math"
	"strconv"
)

// maxDigits is the largest number of minor digits Money supports: 10^18 is the
// largest power of ten an int64 holds.
const maxDigits = 18

// CurrencyDigits reports the number of minor digits of a supported ISO 4217
// currency code, and whether the code is supported. Codes are matched exactly
// (upper case). The supported set is fixed:
//
//	BRL 2, USD 2, EUR 2, GBP 2, ARS 2, MXN 2, CLP 0, JPY 0
func CurrencyDigits(code string) (digits int, ok bool) {
	switch code {
	case "BRL", "USD", "EUR", "GBP", "ARS", "MXN":
		return 2, true
	case "CLP", "JPY":
		return 0, true
	}
	return 0, false
}

// Money is an exact decimal amount: Minor units of 10^-Digits (Minor 9980 with
// Digits 2 is 99.80). It is never a float. Values made by ParseMoney (and so
// by Parse) always carry their currency's Digits, so within one currency ==
// compares amounts and Add sums them exactly. The zero value is 0 with no
// minor digits.
type Money struct {
	Minor  int64
	Digits int
}

// ParseMoney parses a decimal string such as "49.90", "10" or "10.5" into
// minor units with the given number of minor digits (0..18). The string must
// be ASCII digits with an optional '.' followed by 1..digits digits: no sign,
// exponent, spaces or thousands separators. The error is an *InvalidError
// with ReasonInvalidMoney, also when the amount does not fit in an int64 of
// minor units.
func ParseMoney(s string, digits int) (Money, error) {
	if digits < 0 || digits > maxDigits {
		return Money{}, Invalid(ReasonInvalidMoney, fmt.Sprintf("unsupported number of minor digits %d", digits))
	}
	m, detail := parseMoney(s, digits)
	if detail != "" {
		return Money{}, Invalid(ReasonInvalidMoney, detail)
	}
	return m, nil
}

// splitDecimal checks the syntax of a money string and splits it at the '.'.
// On failure it returns a non-empty detail.
func splitDecimal(s string) (intPart, fracPart, detail string) {
	if s == "" {
		return "", "", "money is an empty string"
	}
	if s[0] == '-' {
		return "", "", fmt.Sprintf("money must not be negative, got %s", quote(s))
	}
	intPart, fracPart = s, ""
	dot := -1
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '.' && dot < 0 {
			dot = i
			continue
		}
		if c < '0' || c > '9' {
			return "", "", fmt.Sprintf("want a decimal string such as \"49.90\", got %s", quote(s))
		}
	}
	if dot >= 0 {
		intPart, fracPart = s[:dot], s[dot+1:]
		if intPart == "" || fracPart == "" {
			return "", "", fmt.Sprintf("want a decimal string such as \"49.90\", got %s", quote(s))
		}
	}
	return intPart, fracPart, ""
}

// parseMoney is ParseMoney with the detail as a string ("" on success);
// digits must be in 0..maxDigits.
func parseMoney(s string, digits int) (Money, string) {
	intPart, fracPart, detail := splitDecimal(s)
	if detail != "" {
		return Money{}, detail
	}
	if len(fracPart) > digits {
		if digits == 0 {
			return Money{}, fmt.Sprintf("%s has decimal places, the currency has none", quote(s))
		}
		return Money{}, fmt.Sprintf("%s has more than %d decimal places", quote(s), digits)
	}
	var minor int64
	for _, part := range [...]string{intPart, fracPart} {
		for i := 0; i < len(part); i++ {
			d := int64(part[i] - '0')
			if minor > (math.MaxInt64-d)/10 {
				return Money{}, fmt.Sprintf("%s is too large", quote(s))
			}
			minor = minor*10 + d
		}
	}
	for range digits - len(fracPart) {
		if minor > math.MaxInt64/10 {
			return Money{}, fmt.Sprintf("%s is too large", quote(s))
		}
		minor *= 10
	}
	return Money{Minor: minor, Digits: digits}, ""
}

// String renders the amount with exactly Digits decimal places, for example
// "99.80" (Digits 2) or "1500" (Digits 0). ParseMoney(m.String(), m.Digits)
// returns m for every non-negative m with Digits in 0..18.
func (m Money) String() string {
	digits := max(m.Digits, 0)
	var u uint64
	neg := m.Minor < 0
	if neg {
		u = uint64(-(m.Minor + 1)) + 1 // safe for math.MinInt64
	} else {
		u = uint64(m.Minor)
	}
	s := strconv.FormatUint(u, 10)
	if digits > 0 {
		if len(s) <= digits {
			pad := make([]byte, digits+1-len(s))
			for i := range pad {
				pad[i] = '0'
			}
			s = string(pad) + s
		}
		s = s[:len(s)-digits] + "." + s[len(s)-digits:]
	}
	if neg {
		s = "-" + s
	}
	return s
}

// Add returns m + n. ok is false when the two have different Digits or the
// sum overflows an int64 of minor units.
func (m Money) Add(n Money) (sum Money, ok bool) {
	if m.Digits != n.Digits {
		return Money{}, false
	}
	a, b := m.Minor, n.Minor
	if (b > 0 && a > math.MaxInt64-b) || (b < 0 && a < math.MinInt64-b) {
		return Money{}, false
	}
	return Money{Minor: a + b, Digits: m.Digits}, true
}

// Mul returns m × q. ok is false when the product overflows an int64 of
// minor units.
func (m Money) Mul(q int64) (product Money, ok bool) {
	a := m.Minor
	if a == 0 || q == 0 {
		return Money{Digits: m.Digits}, true
	}
	c := a * q
	if (c < 0) != ((a < 0) != (q < 0)) || c/q != a {
		return Money{}, false
	}
	return Money{Minor: c, Digits: m.Digits}, true
}
