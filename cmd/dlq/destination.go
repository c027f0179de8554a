package main

import "fmt"

// destination returns where a run of f from the queue from sends replays
// (source) and parks messages (parking). The replay function's route of
// the lane's DLQ names them when lc has one; else they are the lane's
// resources r; --to replaces the source. It refuses a resource that names
// another queue than that route (naming both), a route's URL that is not
// a queue URL, and a queue outside from's account and region, but for --to
// with --to-other-account.
func (f *replayFlags) destination(r *resources, from string, lc laneConfig) (source, parking string, err error) {
	home := placeOf(from)
	within := func(what, u string) error {
		if p := placeOf(u); !p.within(home) {
			return fmt.Errorf("the %s %s is in %s, and the queue replayed from, %s, in %s: dlq moves messages only within the account and region of the queue they leave (--to URL --to-other-account sends replays elsewhere, on purpose)",
				what, shown(u), p, shown(from), home)
		}
		return nil
	}
	pick := func(key, what, field, routeURL string) (string, error) {
		if !lc.named || routeURL == "" {
			v, err := r.get(key)
			if err != nil {
				return "", err
			}
			return v, within(what+" of "+r.origin(key), v)
		}
		if err := checkQueueURL(fmt.Sprintf("replay function %s: REPLAY_ROUTES %s", lc.function, field), routeURL); err != nil {
			return "", err
		}
		if v := r.optional(key); v != "" && !sameQueue(v, routeURL) {
			return "", fmt.Errorf("%s names %s as the lane's %s, but the lane's replay function %s names %s (the %s of its route of the DLQ, REPLAY_ROUTES): refusing to choose — fix the outputs or the flag, or pass --to URL to send replays elsewhere on purpose",
				r.origin(key), shown(v), what, lc.function, shown(routeURL), field)
		}
		return routeURL, within(what+" of replay function "+lc.function, routeURL)
	}
	if parking, err = pick(outParking, "parking queue", "parkingUrl", lc.route.ParkingURL); err != nil {
		return "", "", err
	}
	if f.to == "" {
		source, err = pick(outSource, "source queue", "sourceUrl", lc.route.SourceURL)
		return source, parking, err
	}
	if p := placeOf(f.to); !f.toOtherAccount && !p.within(home) {
		return "", "", usageError("--to %s is in %s, and the queue replayed from, %s, in %s: pass --to-other-account to send replays there", shown(f.to), p, shown(from), home)
	}
	return f.to, parking, nil
}
