package order

// Brazilian tax ids. Both validators accept the usual punctuation ('.', '-',
// '/') and spaces anywhere, and check only the characters that remain.

// ValidCPF reports whether s is a CPF (Brazilian individual taxpayer id) with
// valid check digits: 11 digits once '.', '-', '/' and spaces are removed,
// the last two being the mod-11 check digits, and not all eleven the same
// (111.111.111-11 has valid check digits but is not issued).
// "123.456.789-09" and "12345678909" are both valid.
func ValidCPF(s string) bool {
	var d [11]byte
	n, ok := normalizeTaxID(s, d[:])
	if !ok || n != len(d) {
		return false
	}
	same := true
	for i := range d {
		if d[i] < '0' || d[i] > '9' {
			return false
		}
		same = same && d[i] == d[0]
	}
	if same {
		return false
	}
	for _, k := range [...]int{9, 10} {
		sum := 0
		for i := range k {
			sum += int(d[i]-'0') * (k + 1 - i)
		}
		if checkDigit(sum) != d[k] {
			return false
		}
	}
	return true
}

// cnpjWeights are the mod-11 weights of the second CNPJ check digit; the first
// check digit uses the last 12 of them.
var cnpjWeights = [13]int{6, 5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2}

// ValidCNPJ reports whether s is a CNPJ (Brazilian company id) with valid
// check digits: 14 characters once '.', '-', '/' and spaces are removed.
// The first 12 may be digits or letters (the alphanumeric CNPJ in force since
// July 2026, IN RFB 2.229/2024; lower case is accepted as upper case); the
// last 2 are numeric mod-11 check digits, where each character counts as its
// ASCII code minus 48 ('0'..'9' are 0..9, 'A' is 17, 'Z' is 42). A numeric
// CNPJ of fourteen equal digits is rejected.
// "11.222.333/0001-81" and "12.ABC.345/01DE-35" are both valid.
func ValidCNPJ(s string) bool {
	var c [14]byte
	n, ok := normalizeTaxID(s, c[:])
	if !ok || n != len(c) {
		return false
	}
	same := true
	for i := range c {
		switch {
		case c[i] >= '0' && c[i] <= '9':
		case i < 12 && c[i] >= 'a' && c[i] <= 'z':
			c[i] -= 'a' - 'A'
		case i < 12 && c[i] >= 'A' && c[i] <= 'Z':
		default:
			return false
		}
		same = same && c[i] == c[0]
	}
	if same { // all equal and, since the last two are digits, all numeric
		return false
	}
	for _, k := range [...]int{12, 13} {
		sum := 0
		w := cnpjWeights[13-k:]
		for i := range k {
			sum += int(c[i]-'0') * w[i]
		}
		if checkDigit(sum) != c[k] {
			return false
		}
	}
	return true
}

// ValidTaxID reports whether s is a valid CPF or a valid CNPJ.
func ValidTaxID(s string) bool {
	return ValidCPF(s) || ValidCNPJ(s)
}

// checkDigit turns a weighted sum into its mod-11 check digit, as an ASCII byte.
func checkDigit(sum int) byte {
	r := sum % 11
	if r < 2 {
		return '0'
	}
	return byte('0' + 11 - r)
}

// normalizeTaxID copies s into dst without '.', '-', '/' and spaces. n is the
// number of characters kept; ok is false when there are more than len(dst).
func normalizeTaxID(s string, dst []byte) (n int, ok bool) {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '.', '-', '/', ' ':
		default:
			if n == len(dst) {
				return n, false
			}
			dst[n] = c
			n++
		}
	}
	return n, true
}
