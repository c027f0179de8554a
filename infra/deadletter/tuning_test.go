package deadletter

import (
	"os"
	"strings"
	"testing"

	"github.com/homingdlq/homing/settings"
)

// Every replay tuning field sets a variable the replay function declares
// (settings.Replay), and infra/README.md's row of them names each variable
// and its function default, in the fields' order, as settings declares
// them: the README cannot share code with the declarations, so this pins it.
func TestReplayTuningIsTheFunctionsSettings(t *testing.T) {
	declared := map[string]string{} // variable -> its default as the table writes it
	for _, s := range settings.Replay {
		r := s.Row()
		declared[r.Env] = strings.Trim(r.Default, "`")
	}
	var vars, defaults, fields []string
	for _, tu := range (*ReplayProps)(nil).resolve("orders").tuning {
		def, ok := declared[tu.key]
		if !ok {
			t.Errorf("ReplayProps.%s sets %s, which the replay function does not declare", tu.field, tu.key)
		}
		vars = append(vars, "`"+tu.key+"`")
		defaults = append(defaults, def)
		fields = append(fields, tu.field)
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	row := "| " + strings.Join(vars, ", ") + " | set only when the matching `ReplayProps` field (`" + fields[0] + "`, `" + fields[1] +
		"`, …) is set; otherwise the function's default applies (" + strings.Join(defaults, ", ") + ") |"
	if !strings.Contains(string(readme), row) {
		t.Errorf("infra/README.md does not have the row of the replay tuning as settings declares it:\n%s", row)
	}
}
