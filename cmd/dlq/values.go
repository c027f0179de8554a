package main

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// maxShown bounds a value as dlq shows it in a message.
const maxShown = 200

// schemePattern is what may precede a URL's "//": its scheme, or nothing.
var schemePattern = regexp.MustCompile(`^(?:[A-Za-z][A-Za-z0-9+.-]*:)?$`)

// shown is v quoted as dlq shows a value it names or refuses: without
// what precedes its last '@' (a URL's user:password@; the scheme stays),
// its query and its fragment (where tokens ride), control bytes escaped,
// at most maxShown bytes.
func shown(v string) string {
	s := v
	if at := strings.LastIndex(s, "@"); at >= 0 {
		start := 0
		if i := strings.Index(s, "//"); i >= 0 && i < at && schemePattern.MatchString(s[:i]) {
			start = i + 2
		}
		s = s[:start] + s[at+1:]
	}
	if i := strings.IndexAny(s, "?#"); i >= 0 {
		s = s[:i] + "?…"
	}
	if len(s) > maxShown {
		return strconv.Quote(s[:maxShown]) + fmt.Sprintf("… (%d bytes)", len(v))
	}
	return strconv.Quote(s)
}

// checkFunctionName refuses a value of name that is not a function
// lambda:GetFunctionConfiguration takes (isFunctionName).
func checkFunctionName(name, v string) error {
	if !isFunctionName(v) {
		return fmt.Errorf("%s %s: not a Lambda function (want its name, ARN or partial ARN, with a qualifier or without)", name, shown(v))
	}
	return nil
}

// checkOf is the check of a lane output key's value: the check of the
// flag that stands for it.
func checkOf(key string) func(name, v string) error {
	for _, f := range (&globalFlags{}).resourceFlags() {
		if f.key == key {
			return f.check
		}
	}
	return checkFunctionName // outReplayFunction: --replay-function's
}

// checkFound checks every value of a lane found outside the flags (an
// outputs file, a stack's outputs, the lane's tags) as its flag is
// checked; from names a key's origin. An empty value is an absent one.
func checkFound(values, from map[string]string) error {
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(values)) {
		if v := values[k]; v != "" {
			if err := checkOf(k)(from[k], v); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// queuePlace is where a queue is: its account and, when its URL's host
// says it, its region.
type queuePlace struct {
	account, region string
}

var regionPattern = regexp.MustCompile(`^[a-z]{2}(?:-[a-z]+)+-[0-9]+$`)

// placeOf is the place of a queue URL that checkQueueURL accepts: the
// account in its path, the region of a host sqs.REGION.DOMAIN or
// REGION.queue.DOMAIN (us-east-1 for queue.amazonaws.com); no region for
// another host (an emulator's localhost).
func placeOf(queueURL string) queuePlace {
	u, err := url.Parse(queueURL)
	if err != nil {
		return queuePlace{}
	}
	account, _, _ := strings.Cut(strings.TrimPrefix(u.Path, "/"), "/")
	p := queuePlace{account: account}
	host := strings.ToLower(u.Hostname())
	labels := strings.Split(host, ".")
	switch {
	case host == "queue.amazonaws.com":
		p.region = "us-east-1"
	case len(labels) > 2 && labels[0] == "sqs" && regionPattern.MatchString(labels[1]):
		p.region = labels[1]
	case len(labels) > 3 && labels[1] == "queue" && regionPattern.MatchString(labels[0]):
		p.region = labels[0]
	}
	return p
}

// within reports whether p is in o's account and, when both say theirs,
// in its region.
func (p queuePlace) within(o queuePlace) bool {
	return p.account == o.account && (p.region == "" || o.region == "" || p.region == o.region)
}

func (p queuePlace) String() string {
	if p.region == "" {
		return "account " + p.account + " (its URL names no region)"
	}
	return "account " + p.account + ", region " + p.region
}

// sameQueue reports whether two queue URLs name the same queue: the same
// name in the same place (an emulator answers one queue under several
// hosts).
func sameQueue(a, b string) bool {
	name := func(u string) string { return u[strings.LastIndex(u, "/")+1:] }
	pa, pb := placeOf(a), placeOf(b)
	return a == b || name(a) == name(b) && pa.within(pb)
}

// tableName is the name of a table given by its name or its ARN.
func tableName(v string) string {
	if _, name, ok := strings.Cut(v, ":table/"); ok && strings.HasPrefix(v, "arn:") {
		return name
	}
	return v
}

// tableWithin refuses a table ARN outside the account and region of the
// queue at queueURL: a run reads its seal key and its history there. A
// table's name is the queue's account's.
func tableWithin(v, queueURL string) error {
	if !strings.HasPrefix(v, "arn:") {
		return nil
	}
	parts := strings.SplitN(v, ":", 6)
	if len(parts) < 6 {
		return fmt.Errorf("table %s: not a table ARN", shown(v))
	}
	table, queue := queuePlace{account: parts[4], region: parts[3]}, placeOf(queueURL)
	if !table.within(queue) {
		return fmt.Errorf("table %s is in %s, not in the %s of the queue replayed from", shown(v), table, queue)
	}
	return nil
}
