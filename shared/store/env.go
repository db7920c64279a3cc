package store

import (
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/agentsfleet/agentsfleet/shared/setting"
)

// EnvTable is the setting FromEnv reads: the DynamoDB table's name.
const EnvTable = "AGENTSFLEET_TABLE"

// Settings are the variables FromEnv reads.
func Settings() []setting.Var { return []setting.Var{{Name: EnvTable, Required: true}} }

// FromEnv is the Store over the table EnvTable names, with a DynamoDB
// client made from awsCfg. It makes no AWS call.
func FromEnv(getenv func(string) string, awsCfg aws.Config) (*Store, error) {
	table := strings.TrimSpace(getenv(EnvTable))
	if table == "" {
		return nil, fmt.Errorf("%s is not set: it names the DynamoDB table", EnvTable)
	}
	return New(dynamodb.NewFromConfig(awsCfg), table), nil
}
