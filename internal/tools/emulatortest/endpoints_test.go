package emulatortest_test

import (
	"slices"
	"testing"

	"github.com/homingdlq/homing/internal/tools/emulatortest"
)

func TestParseEndpoints(t *testing.T) {
	tests := []struct {
		name, list string
		want       []string // name=URL, in order
		wantErr    bool
	}{
		{name: "one", list: "moto=http://127.0.0.1:4599", want: []string{"moto=http://127.0.0.1:4599"}},
		{name: "three in order", list: "ministack=http://a:1,moto=http://b:2,localstack=http://c:3",
			want: []string{"ministack=http://a:1", "moto=http://b:2", "localstack=http://c:3"}},
		{name: "spaces and an empty entry", list: " ministack = http://a:1 ,, moto=http://b:2 ,",
			want: []string{"ministack=http://a:1", "moto=http://b:2"}},
		{name: "empty", list: "", wantErr: true},
		{name: "only commas", list: ",,", wantErr: true},
		{name: "no name", list: "=http://a:1", wantErr: true},
		{name: "no URL", list: "moto=", wantErr: true},
		{name: "no equals sign", list: "http://a:1", wantErr: true},
		{name: "a name twice", list: "moto=http://a:1,moto=http://b:2", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := emulatortest.ParseEndpoints(tt.list)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			var pairs []string
			for _, e := range got {
				pairs = append(pairs, e.Name+"="+e.URL)
			}
			if !slices.Equal(pairs, tt.want) {
				t.Fatalf("got %v, want %v", pairs, tt.want)
			}
		})
	}
}

func TestServiceVariable(t *testing.T) {
	for s, want := range map[emulatortest.Service]string{
		emulatortest.SQS:      "HOMING_SQS_ENDPOINTS",
		emulatortest.DynamoDB: "HOMING_DYNAMODB_ENDPOINTS",
	} {
		if got := s.Variable(); got != want {
			t.Errorf("%s.Variable() = %q, want %q", s, got, want)
		}
	}
}
