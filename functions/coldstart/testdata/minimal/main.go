// Command minimal is the baseline of the cold-start measurements: an
// aws-lambda-go function that does nothing before lambda.Start, built as
// the functions are.
package main

import (
	"context"
	"encoding/json"

	"github.com/aws/aws-lambda-go/lambda"
)

func main() {
	lambda.Start(func(context.Context, json.RawMessage) (string, error) { return "ok", nil })
}
