package main

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"
)

// pipelineTemplate synthesizes the app as main does, with context, and
// returns the pipeline stack's resources and outputs (nil without one).
func pipelineTemplate(t *testing.T, context map[string]any) (awscdk.Stack, map[string]map[string]any, map[string]any) {
	t.Helper()
	outdir := t.TempDir()
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(outdir), Context: &context})
	if _, err := newApp(app, ProfileAWS, testEnv(nil).get); err != nil {
		t.Fatal(err)
	}
	child := app.Node().TryFindChild(jsii.String(PipelineStackName))
	if child == nil {
		return nil, nil, nil
	}
	stack := child.(awscdk.Stack)
	raw, err := json.Marshal(assertions.Template_FromStack(stack, nil).ToJSON())
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Resources map[string]map[string]any
		Outputs   map[string]any
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	return stack, doc.Resources, doc.Outputs
}

// TestPipelineStack: GitHub's OIDC provider and, per environment, a plan and
// a deploy role whose trust admits exactly one GitHub environment of one
// repository (aud sts.amazonaws.com, sub repo:OWNER/REPO:environment:NAME)
// and whose only permission is to assume CDK bootstrap roles: the lookup
// role for a plan role (read-only), any of them for a deploy role.
func TestPipelineStack(t *testing.T) {
	stack, resources, outputs := pipelineTemplate(t, map[string]any{ContextPipelineRepository: "acme/homing"})
	if stack == nil {
		t.Fatal("no pipeline stack with pipelineRepository set")
	}
	provider := ""
	roles := map[string]map[string]any{}
	policies := map[string]map[string]any{}
	for lid, r := range resources {
		switch r["Type"] {
		case "AWS::IAM::OIDCProvider":
			provider = lid
		case "AWS::IAM::Role":
			roles[lid] = r
		case "AWS::IAM::Policy":
			policies[lid] = r
		default:
			t.Errorf("unexpected resource %s of type %v", lid, r["Type"])
		}
	}
	if provider == "" {
		t.Fatal("no OIDC provider")
	}
	if got := mustJSON(resources[provider]["Properties"]); got != `{"ClientIdList":["sts.amazonaws.com"],"Url":"https://token.actions.githubusercontent.com"}` {
		t.Errorf("provider %s", got)
	}
	arn := func(resource string) string {
		return mustJSON(obj{"Fn::Join": arr{"", arr{"arn:", obj{"Ref": "AWS::Partition"}, ":iam::", obj{"Ref": "AWS::AccountId"}, resource}}})
	}
	lookup := mustJSON(obj{"Fn::Join": arr{"", arr{"arn:", obj{"Ref": "AWS::Partition"}, ":iam::", obj{"Ref": "AWS::AccountId"},
		":role/cdk-hnb659fds-lookup-role-", obj{"Ref": "AWS::AccountId"}, "-*"}}})
	want := map[string]struct{ subject, assumable string }{
		"StagingPlanRole":      {"repo:acme/homing:environment:staging-plan", lookup},
		"StagingDeployRole":    {"repo:acme/homing:environment:staging", arn(":role/cdk-hnb659fds-*")},
		"ProductionPlanRole":   {"repo:acme/homing:environment:production-plan", lookup},
		"ProductionDeployRole": {"repo:acme/homing:environment:production", arn(":role/cdk-hnb659fds-*")},
	}
	if len(roles) != len(want) || len(policies) != len(want) {
		t.Errorf("%d roles and %d policies, want %d of each", len(roles), len(policies), len(want))
	}
	for construct, w := range want {
		t.Run(construct, func(t *testing.T) {
			lid := ""
			for id := range roles {
				if strings.HasPrefix(id, construct) && len(id) == len(construct)+8 {
					lid = id
				}
			}
			if lid == "" {
				t.Fatalf("no role %s", construct)
			}
			p := roles[lid]["Properties"].(map[string]any)
			trust := mustJSON(obj{"Statement": arr{obj{
				"Action": "sts:AssumeRoleWithWebIdentity",
				"Condition": obj{"StringEquals": obj{
					"token.actions.githubusercontent.com:aud": "sts.amazonaws.com",
					"token.actions.githubusercontent.com:sub": w.subject,
				}},
				"Effect":    "Allow",
				"Principal": obj{"Federated": obj{"Ref": provider}},
			}}, "Version": "2012-10-17"})
			if got := mustJSON(p["AssumeRolePolicyDocument"]); got != trust {
				t.Errorf("trust policy\n%s\nwant exactly\n%s", got, trust)
			}
			for _, k := range []string{"ManagedPolicyArns", "Policies", "PermissionsBoundary", "RoleName"} {
				if p[k] != nil {
					t.Errorf("%s: %s %s", lid, k, mustJSON(p[k]))
				}
			}
			found := 0
			for pid, pol := range policies {
				pp := pol["Properties"].(map[string]any)
				if mustJSON(pp["Roles"]) != mustJSON(arr{obj{"Ref": lid}}) {
					continue
				}
				found++
				doc := mustJSON(pp["PolicyDocument"])
				only := mustJSON(obj{"Statement": arr{obj{"Action": "sts:AssumeRole", "Effect": "Allow", "Resource": json.RawMessage(w.assumable)}}, "Version": "2012-10-17"})
				if doc != only {
					t.Errorf("%s: policy\n%s\nwant exactly\n%s", pid, doc, only)
				}
			}
			if found != 1 {
				t.Errorf("%d policies attached, want 1", found)
			}
			if _, ok := outputs[construct+"Arn"]; !ok {
				t.Errorf("no output %sArn (outputs %v)", construct, keys(outputs))
			}
		})
	}

	annotations := assertions.Annotations_FromStack(stack)
	for _, m := range *annotations.FindError(jsii.String("*"), assertions.Match_AnyValue()) {
		t.Errorf("error: %s", mustJSON(m))
	}
	for _, m := range *annotations.FindWarning(jsii.String("*"), assertions.Match_AnyValue()) {
		t.Errorf("warning: %s", mustJSON(m))
	}
	for lid, r := range resources {
		meta, _ := r["Metadata"].(map[string]any)
		nag, _ := meta["cdk_nag"].(map[string]any)
		rules, _ := nag["rules_to_suppress"].([]any)
		for _, rule := range rules {
			rule := rule.(map[string]any)
			if rule["id"] != "AwsSolutions-IAM5" || len(strings.TrimSpace(rule["reason"].(string))) < 20 {
				t.Errorf("%s: suppression %s", lid, mustJSON(rule))
			}
		}
	}
}

// TestPipelineStackOptions: the environments and an account's existing
// provider come from the context; without a repository there is no
// pipeline stack, and invalid values are errors.
func TestPipelineStackOptions(t *testing.T) {
	if stack, _, _ := pipelineTemplate(t, map[string]any{}); stack != nil {
		t.Error("a pipeline stack without pipelineRepository")
	}
	_, resources, outputs := pipelineTemplate(t, map[string]any{
		ContextPipelineRepository:       "acme/homing",
		ContextPipelineEnvironments:     "eu-prod",
		ContextPipelineExistingProvider: "true",
	})
	if got := keys(outputs); mustJSON(got) != `["EuProdDeployRoleArn","EuProdPlanRoleArn"]` {
		t.Errorf("outputs %v", got)
	}
	existing := mustJSON(obj{"Fn::Join": arr{"", arr{"arn:", obj{"Ref": "AWS::Partition"}, ":iam::", obj{"Ref": "AWS::AccountId"},
		":oidc-provider/token.actions.githubusercontent.com"}}})
	for lid, r := range resources {
		if r["Type"] == "AWS::IAM::OIDCProvider" {
			t.Errorf("%s: a provider, with pipelineExistingOidcProvider=true", lid)
		}
		if r["Type"] != "AWS::IAM::Role" {
			continue
		}
		doc := r["Properties"].(map[string]any)["AssumeRolePolicyDocument"].(map[string]any)
		st := doc["Statement"].([]any)[0].(map[string]any)
		if got := mustJSON(st["Principal"].(map[string]any)["Federated"]); got != existing {
			t.Errorf("%s trusts %s, want the account's provider %s", lid, got, existing)
		}
		if sub := mustJSON(st["Condition"]); !strings.Contains(sub, `"repo:acme/homing:environment:eu-prod`) {
			t.Errorf("%s: condition %s", lid, sub)
		}
	}

	for _, tc := range []struct {
		context map[string]any
		want    string
	}{
		{map[string]any{ContextPipelineRepository: "acme"}, `pipelineRepository is "acme", want OWNER/REPO`},
		{map[string]any{ContextPipelineRepository: "acme/homing:environment:x"}, `want OWNER/REPO`},
		{map[string]any{ContextPipelineRepository: "acme/homing", ContextPipelineEnvironments: "staging,staging-plan"}, `has "staging-plan"`},
		{map[string]any{ContextPipelineRepository: "acme/homing", ContextPipelineEnvironments: "a b"}, `has "a b"`},
		{map[string]any{ContextPipelineRepository: "acme/homing", ContextPipelineExistingProvider: "yes"}, `pipelineExistingOidcProvider is "yes"`},
	} {
		_, err := PipelineContext(func(k *string) any { return tc.context[*k] })
		if !errors.Is(err, ErrInvalidPipeline) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("PipelineContext(%v) = %v, want an error saying %s", tc.context, err, tc.want)
		}
	}
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
