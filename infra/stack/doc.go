// Package stack is agentsfleet's CDK stack, Agentsfleet (DESIGN §2): the
// DynamoDB table built from shared/store's schema, the checkpoint and
// fleet-folder bucket, the Lambda functions of functions/ (provided.al2023,
// arm64, from the bootstrap binaries of `make lambdas`), the HTTP API, the
// EventBridge Scheduler group and the role Scheduler invokes the schedule
// function with, the VPC, ECS cluster and Fargate task definition of the
// sandboxes (sandboximage/), the Secrets Manager secrets of the deployment,
// log groups and outputs.
//
// Security boundary: every grant is written out here as a statement on a
// named resource (the stack tests check each one). The sandbox task has no
// task role, so nothing in a sandbox can reach AWS credentials; only the
// webtools function may read fleet secrets, the slack function alone the
// Slack secrets; the model keys reach the runner alone. What it cannot limit: ec2:DescribeNetworkInterfaces (the public
// layout's way to a task's public IP) and the ENI actions of a Lambda in a
// VPC (the private layout) take no resource, and the Bedrock models a
// Definition may name are not known at deploy time.
//
// New builds the stack from Settings; FromContext reads them from the CDK
// context (`-c network=private`, cdk.json).
package stack
