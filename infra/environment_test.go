package main

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
)

// Literals that would pin a template to one environment: a region name, an
// account id (any 12 digits standing alone), and what the CDK writes for an
// account or region it could not resolve.
var environmentLiterals = map[string]*regexp.Regexp{
	"a region":             regexp.MustCompile(`\b(?:us|eu|ap|sa|ca|me|af|il|mx|cn)(?:-gov|-iso[a-z]?)?-[a-z]+-\d\b`),
	"an account id":        regexp.MustCompile(`(?:^|[^0-9A-Za-z])\d{12}(?:[^0-9A-Za-z]|$)`),
	"an unresolved marker": regexp.MustCompile(`unknown-account|unknown-region`),
}

// TestAssemblyIsEnvironmentAgnostic synthesizes the aws profile as the
// deploy workflow's build job does, with no AWS configuration at all (and
// the pipeline stack beside it), and finds no region or account literal in
// any template of the cloud assembly: one assembly deploys to environments
// in different regions, each deploy taking the account and region of its
// credentials (Aws.ACCOUNT_ID, Aws.REGION).
func TestAssemblyIsEnvironmentAgnostic(t *testing.T) {
	for _, k := range []string{"AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE", "CDK_DEFAULT_ACCOUNT", "CDK_DEFAULT_REGION"} {
		t.Setenv(k, "")
	}
	getenv := func(k string) string {
		if k == "HOMING_CODE_DIR" {
			return testEnv(nil).get(k)
		}
		return os.Getenv(k)
	}
	outdir := t.TempDir()
	app := awscdk.NewApp(&awscdk.AppProps{
		Outdir:  jsii.String(outdir),
		Context: &map[string]any{ContextPipelineRepository: "acme/homing"},
	})
	stack, err := newApp(app, ProfileAWS, getenv)
	if err != nil {
		t.Fatal(err)
	}
	if !*awscdk.Token_IsUnresolved(stack.Region()) || !*awscdk.Token_IsUnresolved(stack.Account()) {
		t.Errorf("stack environment %s/%s, want none", *stack.Account(), *stack.Region())
	}
	dir := *app.Synth(nil).Directory()
	templates, err := filepath.Glob(filepath.Join(dir, "*.template.json"))
	if err != nil || len(templates) != 2 {
		t.Fatalf("templates %v (%v), want Homing's and HomingPipeline's", templates, err)
	}
	for _, path := range templates {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for what, re := range environmentLiterals {
			for _, m := range re.FindAllString(string(raw), 5) {
				t.Errorf("%s holds %s: %q", filepath.Base(path), what, m)
			}
		}
	}
}

// The patterns find what they are for, and nothing in a token.
func TestEnvironmentLiterals(t *testing.T) {
	for text, want := range map[string]string{
		`"arn:aws:sqs:us-east-1:"`:                     "a region",
		`"Region":"eu-west-1"`:                         "a region",
		`"us-gov-west-1"`:                              "a region",
		`arn:aws:iam::123456789012:role/x`:             "an account id",
		`"aws://unknown-account/unknown-region"`:       "an unresolved marker",
		`{"Ref":"AWS::Region"}`:                        "",
		`"asset.ec6a7104c6211eeb6999dd6acb5d5d8e0e36"`: "",
		`"Threshold":907200`:                           "",
	} {
		got := ""
		for what, re := range environmentLiterals {
			if re.MatchString(text) {
				got = what
			}
		}
		if got != want {
			t.Errorf("%s: found %q, want %q", text, got, want)
		}
	}
}
