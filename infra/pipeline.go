package main

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

// The pipeline stack: the trust that .github/workflows/deploy.yml rests on,
// as code. An administrator deploys it once per account (it is never part
// of the assembly the workflow deploys), after `make build ARCH=arm64` (the
// app synthesizes the Homing stack beside it):
//
//	cd infra && cdk deploy HomingPipeline -c pipelineRepository=OWNER/REPO
//
// It holds GitHub's OIDC provider and, per GitHub environment, two roles
// that only that environment's jobs of that repository can assume: a plan
// role ("<environment>-plan", cdk diff) that may assume only the CDK
// bootstrap's lookup role (read-only), and a deploy role ("<environment>")
// that may assume only the CDK bootstrap's roles (cdk-hnb659fds-*), which
// do the work. Neither holds any other permission. The outputs are the
// roles' ARNs, the value of each GitHub environment's AWS_ROLE_ARN.
const (
	// PipelineStackName is the pipeline stack's name.
	PipelineStackName = "HomingPipeline"
	// GitHubOIDCHost is the issuer of GitHub Actions' OIDC tokens; the
	// roles' conditions name its claims.
	GitHubOIDCHost = "token.actions.githubusercontent.com"
	// GitHubOIDCAudience is the audience configure-aws-credentials asks for.
	GitHubOIDCAudience = "sts.amazonaws.com"
	// PlanEnvironmentSuffix names an environment's plan environment
	// (deploy-environment.yml's plan job: "<environment>-plan").
	PlanEnvironmentSuffix = "-plan"
)

// The context keys of the pipeline stack (cdk deploy -c key=value).
const (
	// ContextPipelineRepository is the GitHub repository, OWNER/REPO; the
	// app adds the pipeline stack only when it is set.
	ContextPipelineRepository = "pipelineRepository"
	// ContextPipelineEnvironments are the GitHub environments, separated by
	// commas (default "staging,production"): deploy each account's stack
	// with only the environments that deploy to that account.
	ContextPipelineEnvironments = "pipelineEnvironments"
	// ContextPipelineExistingProvider "true": the account has GitHub's OIDC
	// provider already (IAM holds one per URL), which the roles then name.
	ContextPipelineExistingProvider = "pipelineExistingOidcProvider"
)

// defaultPipelineEnvironments are deploy.yml's environments.
func defaultPipelineEnvironments() []string { return []string{"staging", "production"} }

// ErrInvalidPipeline is wrapped by the errors of PipelineContext.
var ErrInvalidPipeline = errors.New("invalid pipeline context")

// PipelineStackProps configures [NewPipelineStack].
type PipelineStackProps struct {
	awscdk.StackProps
	// Repository is the GitHub repository, OWNER/REPO, whose workflows
	// assume the roles.
	Repository string
	// Environments are the GitHub environments that deploy; each has a
	// deploy role and a plan role (for "<name>-plan").
	Environments []string
	// ExistingProvider makes the roles trust the account's existing OIDC
	// provider of GitHubOIDCHost instead of creating one.
	ExistingProvider bool
}

var (
	repositoryPattern  = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})/[A-Za-z0-9._-]{1,100}$`)
	environmentPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
)

// PipelineContext reads the pipeline stack's props from the app's context
// (lookup is app.Node().TryGetContext): nil when ContextPipelineRepository
// is unset; an error wrapping ErrInvalidPipeline when a value is invalid.
func PipelineContext(lookup func(*string) any) (*PipelineStackProps, error) {
	str := func(key string) string {
		s, _ := lookup(jsii.String(key)).(string)
		return strings.TrimSpace(s)
	}
	repo := str(ContextPipelineRepository)
	if repo == "" {
		return nil, nil
	}
	p := &PipelineStackProps{Repository: repo, Environments: defaultPipelineEnvironments()}
	p.StackProps.Description = jsii.String("homing: the deploy workflow's GitHub OIDC provider and roles (" + repo + ")")
	var errs []error
	if !repositoryPattern.MatchString(repo) {
		errs = append(errs, fmt.Errorf("%s is %q, want OWNER/REPO", ContextPipelineRepository, repo))
	}
	if envs := str(ContextPipelineEnvironments); envs != "" {
		p.Environments = nil
		for _, e := range strings.Split(envs, ",") {
			e = strings.TrimSpace(e)
			if !environmentPattern.MatchString(e) || strings.HasSuffix(e, PlanEnvironmentSuffix) {
				errs = append(errs, fmt.Errorf("%s has %q, want GitHub environment names (letters, digits, - and _, not ending in %s)",
					ContextPipelineEnvironments, e, PlanEnvironmentSuffix))
				continue
			}
			p.Environments = append(p.Environments, e)
		}
	}
	switch v := str(ContextPipelineExistingProvider); v {
	case "", "false":
	case "true":
		p.ExistingProvider = true
	default:
		errs = append(errs, fmt.Errorf("%s is %q, want true or false", ContextPipelineExistingProvider, v))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: %w", ErrInvalidPipeline, errors.Join(errs...))
	}
	return p, nil
}

// GitHubSubject is the sub claim of a job of repo that runs in environment.
func GitHubSubject(repo, environment string) string {
	return "repo:" + repo + ":environment:" + environment
}

// NewPipelineStack adds the pipeline stack (see PipelineStackName) to scope.
// It is environment agnostic: the account in its ARNs is the one it is
// deployed to.
func NewPipelineStack(scope constructs.Construct, id string, props *PipelineStackProps) awscdk.Stack {
	stack := awscdk.NewStack(scope, jsii.String(id), &props.StackProps)

	var providerArn *string
	if props.ExistingProvider {
		providerArn = stack.FormatArn(&awscdk.ArnComponents{
			Service: jsii.String("iam"), Region: jsii.String(""), Resource: jsii.String("oidc-provider"),
			ResourceName: jsii.String(GitHubOIDCHost), ArnFormat: awscdk.ArnFormat_SLASH_RESOURCE_NAME,
		})
	} else {
		// No thumbprint: IAM trusts GitHub's certificate authority itself.
		provider := awsiam.NewOidcProviderNative(stack, jsii.String("GitHubOidcProvider"), &awsiam.OidcProviderNativeProps{
			Url:           jsii.String("https://" + GitHubOIDCHost),
			ClientIds:     jsii.Strings(GitHubOIDCAudience),
			RemovalPolicy: awscdk.RemovalPolicy_RETAIN_ON_UPDATE_OR_DELETE,
		})
		providerArn = provider.OidcProviderArn()
	}

	qualifier := *awscdk.DefaultStackSynthesizer_DEFAULT_QUALIFIER()
	bootstrapRole := func(name string) *string {
		return stack.FormatArn(&awscdk.ArnComponents{
			Service: jsii.String("iam"), Region: jsii.String(""), Resource: jsii.String("role"),
			ResourceName: jsii.String(name), ArnFormat: awscdk.ArnFormat_SLASH_RESOURCE_NAME,
		})
	}
	// The bootstrap names its roles cdk-<qualifier>-<kind>-role-<account>-<region>.
	lookupRoles := bootstrapRole("cdk-" + qualifier + "-lookup-role-" + *awscdk.Aws_ACCOUNT_ID() + "-*")
	allRoles := bootstrapRole("cdk-" + qualifier + "-*")

	for _, env := range props.Environments {
		name := pascal(env)
		role := func(kind, environment, description string, assumable *string, reason string) {
			r := awsiam.NewRole(stack, jsii.String(name+kind+"Role"), &awsiam.RoleProps{
				Description: jsii.String(description),
				AssumedBy: awsiam.NewWebIdentityPrincipal(providerArn, &map[string]any{
					"StringEquals": map[string]any{
						GitHubOIDCHost + ":aud": GitHubOIDCAudience,
						GitHubOIDCHost + ":sub": GitHubSubject(props.Repository, environment),
					},
				}),
			})
			r.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
				Actions:   jsii.Strings("sts:AssumeRole"),
				Resources: &[]*string{assumable},
			}))
			cdknag.NagSuppressions_AddResourceSuppressions(r, &[]*cdknag.NagPackSuppression{
				{Id: jsii.String("AwsSolutions-IAM5"), Reason: jsii.String(reason)},
			}, jsii.Bool(true))
			awscdk.NewCfnOutput(stack, jsii.String(name+kind+"RoleArn"), &awscdk.CfnOutputProps{
				Value:       r.RoleArn(),
				Description: jsii.String("AWS_ROLE_ARN of the GitHub environment " + environment + "."),
			})
		}
		role("Plan", env+PlanEnvironmentSuffix,
			"cdk diff of the "+env+" deploy ("+props.Repository+", environment "+env+PlanEnvironmentSuffix+"): assumes the CDK lookup role only (read-only).",
			lookupRoles, "The CDK bootstrap names its lookup role per region (cdk-"+qualifier+"-lookup-role-<account>-<region>): "+
				"the wildcard is the region, in this account, and the role it names is read-only.")
		role("Deploy", env,
			"cdk deploy of the "+env+" environment ("+props.Repository+"): assumes the CDK bootstrap roles only, which do the work.",
			allRoles, "The CDK bootstrap roles are named cdk-"+qualifier+"-<kind>-role-<account>-<region>: "+
				"the wildcard covers those of this account (deploy, file and image publishing, lookup) in every region, and nothing else.")
	}
	return stack
}

// pascal writes an environment name in PascalCase for construct ids:
// "staging" -> "Staging", "eu-prod" -> "EuProd".
func pascal(s string) string {
	var b strings.Builder
	up := true
	for _, r := range s {
		switch {
		case r == '-' || r == '_':
			up = true
		case up && r >= 'a' && r <= 'z':
			b.WriteRune(r - 'a' + 'A')
			up = false
		default:
			b.WriteRune(r)
			up = false
		}
	}
	return b.String()
}
