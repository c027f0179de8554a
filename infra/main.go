// Command infra is the CDK app of homing: the stack "Homing", holding one
// dead-letter lane (see package deadletter), in the profile named by the CDK
// context key "profile" (cdk synth -c profile=local) or else the environment
// variable HOMING_PROFILE, default "aws"; and, when the context key
// pipelineRepository names a GitHub repository, the stack "HomingPipeline"
// with the deploy workflow's OIDC provider and roles (pipeline.go).
// cdk-nag's AwsSolutions checks run on every synthesis; an error-level
// finding fails it.
//
// Run it through the CDK CLI (cdk.json) or directly: `go run .` writes the
// cloud assembly to $CDK_OUTDIR.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/homingdlq/homing/infra/deadletter"
)

func main() {
	err := run()
	jsii.Close()
	if err != nil {
		fmt.Fprintln(os.Stderr, "infra:", err)
		os.Exit(1)
	}
}

func run() error {
	app := awscdk.NewApp(nil)
	profile := selectProfile(app.Node().TryGetContext(jsii.String("profile")), os.Getenv("HOMING_PROFILE"))
	if _, err := newApp(app, profile, os.Getenv); err != nil {
		return err
	}
	assembly := app.Synth(nil)
	findings, err := errorFindings(*assembly.Directory())
	if err != nil {
		return err
	}
	for _, f := range findings {
		fmt.Fprintln(os.Stderr, f)
	}
	if len(findings) > 0 {
		return fmt.Errorf("%d error-level findings (cdk-nag or CDK) in the %s profile", len(findings), profile)
	}
	return nil
}

// errorFindings lists the error-level annotations (cdk-nag findings among
// them) that the cloud assembly in dir records, as "path: message", sorted.
// It reads the manifest and the artifacts' additional metadata files itself:
// the CDK writes annotations there, where the Go cxapi types (deprecated)
// no longer look.
func errorFindings(dir string) ([]string, error) {
	type entries map[string][]struct {
		Type string `json:"type"`
		Data any    `json:"data"`
	}
	var manifest struct {
		Artifacts map[string]struct {
			Metadata               entries `json:"metadata"`
			AdditionalMetadataFile string  `json:"additionalMetadataFile"`
		} `json:"artifacts"`
	}
	read := func(name string, v any) error {
		raw, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return fmt.Errorf("read cloud assembly: %w", err)
		}
		if err := json.Unmarshal(raw, v); err != nil {
			return fmt.Errorf("parse cloud assembly %s: %w", name, err)
		}
		return nil
	}
	if err := read("manifest.json", &manifest); err != nil {
		return nil, err
	}
	var findings []string
	for _, artifact := range manifest.Artifacts {
		all := []entries{artifact.Metadata}
		if artifact.AdditionalMetadataFile != "" {
			var more entries
			if err := read(artifact.AdditionalMetadataFile, &more); err != nil {
				return nil, err
			}
			all = append(all, more)
		}
		for _, es := range all {
			for path, list := range es {
				for _, e := range list {
					if e.Type == "aws:cdk:error" {
						findings = append(findings, fmt.Sprintf("%s: %v", path, e.Data))
					}
				}
			}
		}
	}
	sort.Strings(findings)
	return findings, nil
}

// selectProfile picks the profile from the CDK context value, else the
// environment value, else [ProfileAWS].
func selectProfile(context any, env string) string {
	if s, ok := context.(string); ok && s != "" {
		return s
	}
	if env != "" {
		return env
	}
	return ProfileAWS
}

// newApp adds the Homing stack of the profile to app (see ProfileProps for
// its environment), and the pipeline stack HomingPipeline when the context
// names a repository (PipelineContext), with the AwsSolutions checks as an
// aspect. Invalid props (deadletter.ErrInvalidProps, or
// ErrInvalidStackProps such as an http:// tax service on the aws profile)
// and an invalid pipeline context are an error, not a panic.
func newApp(app awscdk.App, profile string, getenv func(string) string) (stack awscdk.Stack, err error) {
	props, err := ProfileProps(profile, getenv)
	if err != nil {
		return nil, err
	}
	defer func() {
		if r := recover(); r != nil {
			invalid, ok := r.(error)
			if !ok || !errors.Is(invalid, deadletter.ErrInvalidProps) && !errors.Is(invalid, ErrInvalidStackProps) {
				panic(r)
			}
			stack, err = nil, fmt.Errorf("%s profile: %w", profile, invalid)
		}
	}()
	stack = NewHomingStack(app, StackName, props)
	pipeline, err := PipelineContext(app.Node().TryGetContext)
	if err != nil {
		return nil, err
	}
	if pipeline != nil {
		NewPipelineStack(app, PipelineStackName, pipeline)
	}
	awscdk.Aspects_Of(app).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{Verbose: jsii.Bool(true)}), nil)
	return stack, nil
}
