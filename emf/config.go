package emf

import (
	"errors"
	"fmt"

	"github.com/homingdlq/homing/internal/emfline"
	"github.com/homingdlq/homing/internal/settings"
)

// Config says where a lane's metrics go. The zero value is not valid; see
// [LoadConfig].
type Config struct {
	Namespace string // the CloudWatch namespace (POWERTOOLS_METRICS_NAMESPACE)
	Lane      string // the value of the Lane dimension (POWERTOOLS_SERVICE_NAME)
}

// LoadConfig reads settings.MetricsNamespace (default "Homing") and
// settings.ServiceName (default defaultLane, which a consumer sets to its
// CONSUMER_NAME) through getenv, named as Powertools for AWS Lambda names
// them. The caller validates the result with [Config.Validate].
func LoadConfig(getenv func(string) string, defaultLane string) Config {
	env := settings.NewReader(getenv)
	return Config{
		Namespace: env.String(settings.MetricsNamespace),
		Lane:      env.StringOr(settings.ServiceName, defaultLane),
	}
}

// Validate reports every value CloudWatch would reject, in the words of the
// variables: a namespace of 1..255 ASCII letters, digits and . - _ / # : or
// spaces, not starting with "AWS/", and a lane of 1..1024 printable ASCII
// characters, neither blank.
func (c Config) Validate() error {
	var errs []error
	if err := emfline.CheckNamespace(c.Namespace); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", settings.MetricsNamespace.Env, err))
	}
	if err := emfline.CheckDimensionValue(c.Lane); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w (it is the %s dimension)", settings.ServiceName.Env, err, settings.DimensionLane))
	}
	return errors.Join(errs...)
}
