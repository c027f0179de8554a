// Command localcheck runs after `cdk deploy` to the local emulator. It
// writes the stack outputs, flat, to a JSON file for tests, the demo and the
// dlq CLI, then reads the deployed resources back and compares them with the
// deployed template (internal/tools/conformance). A known emulator gap is repaired
// by its emulator-only step only with -fix-emulator-gaps, and said out loud.
// Any other difference fails the command. It is never run against AWS.
//
//	localcheck [-stack Homing] [-outputs .local/outputs.json] [-tax-url http://127.0.0.1:4580] [-fix-emulator-gaps]
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/homingdlq/homing/internal/tools/conformance"
	"github.com/homingdlq/homing/internal/tools/drill"
)

func main() {
	if err := run(context.Background(), os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "localcheck:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("localcheck", flag.ContinueOnError)
	stack := fs.String("stack", "Homing", "CloudFormation stack name")
	outputs := fs.String("outputs", ".local/outputs.json", "where to write the stack outputs, flat")
	taxURL := fs.String("tax-url", "http://127.0.0.1:4580", "base URL of the tax stand-in, written as TaxServiceAdminUrl")
	fix := fs.Bool("fix-emulator-gaps", false, "apply the emulator-only repair of known emulator gaps")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if os.Getenv("AWS_ENDPOINT_URL") == "" {
		return errors.New("AWS_ENDPOINT_URL is not set: localcheck is for the local emulator only")
	}
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return fmt.Errorf("load AWS config: %w", err)
	}
	cf := cloudformation.NewFromConfig(cfg)
	stackID, err := writeOutputs(ctx, cf, *stack, *outputs, *taxURL)
	if err != nil {
		return err
	}
	// arn:<partition>:cloudformation:<region>:<account>:stack/<name>/<id>
	arn := strings.SplitN(stackID, ":", 6)
	if len(arn) != 6 {
		return fmt.Errorf("stack id %q is not an ARN", stackID)
	}
	tpl, err := cf.GetTemplate(ctx, &cloudformation.GetTemplateInput{StackName: stack})
	if err != nil {
		return fmt.Errorf("get template of %s: %w", *stack, err)
	}
	res, err := cf.DescribeStackResources(ctx, &cloudformation.DescribeStackResourcesInput{StackName: stack})
	if err != nil {
		return fmt.Errorf("list resources of %s: %w", *stack, err)
	}
	var resources []conformance.Resource
	for _, r := range res.StackResources {
		resources = append(resources, conformance.Resource{LogicalID: aws.ToString(r.LogicalResourceId), Type: aws.ToString(r.ResourceType), PhysicalID: aws.ToString(r.PhysicalResourceId)})
	}
	checker := &conformance.Checker{
		Pseudo: map[string]string{"AWS::Partition": arn[1], "AWS::Region": arn[3], "AWS::AccountId": arn[4]},
		Queues: sqs.NewFromConfig(cfg), Tables: dynamodb.NewFromConfig(cfg), Mappings: lambda.NewFromConfig(cfg),
	}
	body := []byte(aws.ToString(tpl.TemplateBody))
	findings, err := checker.Check(ctx, body, resources)
	if err != nil {
		return err
	}
	fixed := 0
	for _, f := range findings {
		if f.Fix == nil || !*fix {
			continue
		}
		fmt.Printf("localcheck: EMULATOR GAP %s\n            applying the emulator-only fix\n", f)
		if err := f.Fix(ctx); err != nil {
			return err
		}
		fixed++
	}
	if fixed > 0 {
		if findings, err = checker.Check(ctx, body, resources); err != nil {
			return err
		}
	}
	if len(findings) > 0 {
		for _, f := range findings {
			fmt.Fprintf(os.Stderr, "localcheck: DIFFERS %s\n", f)
		}
		return fmt.Errorf("%d deployed properties differ from the template of %s", len(findings), *stack)
	}
	fmt.Printf("localcheck: %d resources of %s conform to the template (%d emulator gaps repaired); outputs in %s\n", len(resources), *stack, fixed, *outputs)
	return nil
}

// writeOutputs writes the stack's outputs and returns its id (an ARN).
func writeOutputs(ctx context.Context, cf *cloudformation.Client, stack, path, taxURL string) (string, error) {
	out, err := cf.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(stack)})
	if err != nil {
		return "", fmt.Errorf("describe %s: %w", stack, err)
	}
	if len(out.Stacks) != 1 {
		return "", fmt.Errorf("describe %s: %d stacks", stack, len(out.Stacks))
	}
	flat := map[string]string{drill.TaxServiceAdminURL: taxURL}
	for _, o := range out.Stacks[0].Outputs {
		flat[aws.ToString(o.OutputKey)] = aws.ToString(o.OutputValue)
	}
	b, err := json.MarshalIndent(flat, "", "  ")
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return "", err
	}
	return aws.ToString(out.Stacks[0].StackId), nil
}
