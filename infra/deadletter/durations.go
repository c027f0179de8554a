package deadletter

import (
	"math"
	"strconv"
)

// human writes a duration in seconds as people write it in the CDK's own
// terms: in the largest unit that divides it, days, hours, minutes,
// seconds or milliseconds ("15d", "4h", "90m", "90s", "2500ms"), so that a
// validation message quotes the value as it was likely written. A value
// that is no whole number of milliseconds is written in seconds ("0.0001s").
func human(s float64) string {
	sign := ""
	if s < 0 {
		sign = "-"
		s = -s
	}
	for _, u := range [...]struct {
		name    string
		seconds float64
	}{{"d", 86400}, {"h", 3600}, {"m", 60}, {"s", 1}, {"ms", 0.001}} {
		n := s / u.seconds
		if r := math.Round(n); r >= 1 && math.Abs(n-r) < 1e-9*math.Max(1, r) {
			return sign + strconv.FormatFloat(r, 'f', -1, 64) + u.name
		}
	}
	if s == 0 {
		return "0s"
	}
	return sign + strconv.FormatFloat(s, 'f', -1, 64) + "s"
}
