package deadletter

import "testing"

func TestShortestGap(t *testing.T) {
	const minute, hour, day = 60, 3600, 86400
	for _, tc := range []struct {
		schedule string
		gap      float64 // seconds; 0: not known
	}{
		{"rate(1 minute)", minute},
		{"rate(15 minutes)", 15 * minute},
		{"rate(2 hours)", 2 * hour},
		{"rate(1 day)", day},
		{"cron(0/5 * * * ? *)", 5 * minute},
		{"cron(*/10 * * * ? *)", 10 * minute},
		{"cron(0,10,30 * * * ? *)", 10 * minute},
		{"cron(15-20 8 * * ? *)", minute},
		{"cron(10-40/15 * * * ? *)", 15 * minute}, // :10 :25 :40, then :10 of the next hour
		{"cron(0 * * * ? *)", hour},
		{"cron(0 3 * * ? *)", day},
		{"cron(0 9-17 ? * MON-FRI *)", hour},
		// across midnight: counted when every day runs
		{"cron(0 0,23 * * ? *)", hour},
		{"cron(55 23 * * ? *)", day},
		// not counted when some days do not run: the gap within a day, or a
		// day for a day that runs once
		{"cron(55 0,23 ? * MON-FRI *)", 23 * hour},
		{"cron(55 23 ? * MON *)", day},
		// not read: EventBridge checks it at deploy time
		{"cron(0 25 * * ? *)", 0},
		{"cron(61 * * * ? *)", 0},
		{"cron(5-1 * * * ? *)", 0},
		{"cron(0/0 * * * ? *)", 0},
		{"cron(L * * * ? *)", 0},
		{"cron(0 * * * ?)", 0},
		{"rate(0 minutes)", 0},
		{"every 15 minutes", 0},
		{"${Token[TOKEN.123]}", 0},
	} {
		t.Run(tc.schedule, func(t *testing.T) {
			gap, ok := shortestGap(tc.schedule)
			if ok != (tc.gap != 0) || gap != tc.gap {
				t.Errorf("shortestGap(%q) = %v, %v; want %v, %v", tc.schedule, gap, ok, tc.gap, tc.gap != 0)
			}
		})
	}
}
