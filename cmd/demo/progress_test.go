package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"
)

// Off a terminal each phase is one line, written when it ends, without a
// carriage return; on a terminal the line is redrawn in place.
func TestProgress(t *testing.T) {
	tests := []struct {
		name     string
		terminal bool
		want     []string // lines, "\r" shown as is
	}{
		{"file or pipe: one line per phase", false, []string{
			"      invalid orders reach the invalid queue               7/7                                         6s  done",
			"      valid orders fail and SQS moves them to the DLQ      3/9 in the DLQ                            300s  timed out",
		}},
		{"terminal: redrawn", true, []string{
			"\r      invalid orders reach the invalid queue               1/7                                         2s" +
				"\r      invalid orders reach the invalid queue               7/7                                         6s  done",
			"\r      valid orders fail and SQS moves them to the DLQ      3/9 in the DLQ                            300s  timed out",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			p := progress{w: &out, terminal: tt.terminal}
			p.poll("invalid orders reach the invalid queue", "1/7", 2*time.Second)
			p.end("invalid orders reach the invalid queue", "7/7", 6*time.Second, true)
			p.end("valid orders fail and SQS moves them to the DLQ", "3/9 in the DLQ", 300*time.Second, false)
			got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Fatalf("output:\n%q\nwant:\n%q", got, tt.want)
			}
			if !tt.terminal && strings.Contains(out.String(), "\r") {
				t.Fatal("a carriage return off a terminal")
			}
		})
	}
}

func TestNewProgressIsOffATerminalForAFile(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if newProgress(f).terminal {
		t.Fatal("a file is not a terminal")
	}
	if newProgress(&bytes.Buffer{}).terminal {
		t.Fatal("a buffer is not a terminal")
	}
}
