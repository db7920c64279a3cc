package stack

import (
	"strconv"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsecrassets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsecs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/jsii-runtime-go"

	"github.com/agentsfleet/agentsfleet/sandboximage"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/launch/ecs"
)

// Sandbox is the sandboxes' network, cluster and task definition.
type Sandbox struct {
	Vpc awsec2.Vpc
	// Subnets are where the tasks run: public subnets in the public
	// layout, private ones in the private layout.
	Subnets *awsec2.SelectedSubnets
	// Group is the tasks' security group: sandboxd's port the only
	// ingress, egress as Settings.SandboxEgress.
	Group awsec2.SecurityGroup
	// RunnerGroup is the runner's security group in the private layout
	// (nil in the public one, where the runner is in no VPC).
	RunnerGroup awsec2.SecurityGroup
	Cluster     awsecs.Cluster
	Task        awsecs.FargateTaskDefinition
	// BrowserTask is the browser image's task definition, nil unless
	// Settings.SandboxBrowser.
	BrowserTask   awsecs.FargateTaskDefinition
	ExecutionRole awsiam.Role
}

// imageExcludes keep the sandbox image's build context (the repository
// root, which the Dockerfile needs for go.mod) to the sources.
var imageExcludes = []string{".git", ".venv", "bin", "build", "cdk.out", "infra", "node_modules", ".dev", "bench.txt", "*.test", "*.prof"}

// newSandbox builds the VPC, cluster and task definition of the sandboxes.
func newSandbox(stack awscdk.Stack, s Settings) *Sandbox {
	sb := &Sandbox{}
	public := &awsec2.SubnetConfiguration{Name: jsii.String("public"), SubnetType: awsec2.SubnetType_PUBLIC, CidrMask: jsii.Number(24)}
	vpcProps := &awsec2.VpcProps{
		IpAddresses: awsec2.IpAddresses_Cidr(jsii.String("10.40.0.0/16")),
		MaxAzs:      jsii.Number(2),
		// The default security group is left as EC2 makes it: restricting
		// it takes a custom-resource Lambda, and nothing here uses it.
		RestrictDefaultSecurityGroup: jsii.Bool(false),
	}
	tasksIn := awsec2.SubnetType_PUBLIC
	if s.Network == Public {
		// No NAT gateway and no endpoint: nothing of the network bills at
		// rest. The tasks reach the internet through their public IPs.
		vpcProps.NatGateways = jsii.Number(0)
		vpcProps.SubnetConfiguration = &[]*awsec2.SubnetConfiguration{public}
	} else {
		vpcProps.NatGateways = jsii.Number(s.NATGateways)
		vpcProps.SubnetConfiguration = &[]*awsec2.SubnetConfiguration{public,
			{Name: jsii.String("private"), SubnetType: awsec2.SubnetType_PRIVATE_WITH_EGRESS, CidrMask: jsii.Number(22)}}
		tasksIn = awsec2.SubnetType_PRIVATE_WITH_EGRESS
	}
	sb.Vpc = awsec2.NewVpc(stack, jsii.String("Vpc"), vpcProps)
	sb.Subnets = sb.Vpc.SelectSubnets(&awsec2.SubnetSelection{SubnetType: tasksIn})
	if s.Network == Private {
		// Gateway endpoints are free: DynamoDB and S3 traffic of the runner
		// and the tasks skips the NAT gateway's per-GB charge.
		private := &[]*awsec2.SubnetSelection{{SubnetType: awsec2.SubnetType_PRIVATE_WITH_EGRESS}}
		sb.Vpc.AddGatewayEndpoint(jsii.String("DynamoDB"), &awsec2.GatewayVpcEndpointOptions{Service: awsec2.GatewayVpcEndpointAwsService_DYNAMODB(), Subnets: private})
		sb.Vpc.AddGatewayEndpoint(jsii.String("S3"), &awsec2.GatewayVpcEndpointOptions{Service: awsec2.GatewayVpcEndpointAwsService_S3(), Subnets: private})
		sb.RunnerGroup = awsec2.NewSecurityGroup(stack, jsii.String("RunnerGroup"), &awsec2.SecurityGroupProps{
			Vpc:              sb.Vpc,
			Description:      jsii.String("agentsfleet runner: out to the sandboxes, AWS and the model"),
			AllowAllOutbound: jsii.Bool(true),
		})
	}

	sb.Group = awsec2.NewSecurityGroup(stack, jsii.String("SandboxGroup"), &awsec2.SecurityGroupProps{
		Vpc:              sb.Vpc,
		Description:      jsii.String("agentsfleet sandboxes: sandboxd TLS port in, the egress policy out"),
		AllowAllOutbound: jsii.Bool(s.SandboxEgressAll),
	})
	port := awsec2.Port_Tcp(jsii.Number(sandboximage.Port))
	if s.Network == Public {
		// The runner runs in no VPC and has no fixed address: the port is
		// open to all, and sandboxd admits only the task's token over TLS
		// whose key the runner pins.
		sb.Group.AddIngressRule(awsec2.Peer_AnyIpv4(), port, jsii.String("sandboxd (TLS, per-task token)"), nil)
	} else {
		sb.Group.AddIngressRule(sb.RunnerGroup, port, jsii.String("sandboxd from the runner"), nil)
	}
	if !s.SandboxEgressAll {
		for _, p := range s.SandboxEgress {
			sb.Group.AddEgressRule(awsec2.Peer_AnyIpv4(), awsec2.Port_Tcp(jsii.Number(p)), jsii.String("egress policy: tcp "+strconv.Itoa(p)), nil)
		}
	}

	sb.Cluster = awsecs.NewCluster(stack, jsii.String("Cluster"), &awsecs.ClusterProps{
		Vpc:                 sb.Vpc,
		ContainerInsightsV2: awsecs.ContainerInsights_DISABLED,
	})
	// The execution role pulls the image and writes the task's logs; it is
	// ECS's, never the task's. Its grants are CDK's for the image asset and
	// the log group (the stack tests list them).
	sb.ExecutionRole = awsiam.NewRole(stack, jsii.String("SandboxExecutionRole"), &awsiam.RoleProps{
		AssumedBy:   awsiam.NewServicePrincipal(jsii.String("ecs-tasks.amazonaws.com"), nil),
		Description: jsii.String("agentsfleet sandboxes: ECS pulls the image and writes logs (no task role)"),
	})
	logs := logGroup(stack, "SandboxLogs", "/agentsfleet/"+Name+"/sandbox", s)
	size := sandboxSize
	sb.Task = sb.taskDefinition(stack, s, logs, "SandboxTask", Name+"-sandbox", size.MemoryMiB(), "", "sandbox")
	if s.SandboxBrowser {
		// Chromium's memory on top, as the launcher adds it to each size
		// (sandboximage.BrowserMemoryMiB): 0.5 vCPU with 2 GiB.
		sb.BrowserTask = sb.taskDefinition(stack, s, logs, "SandboxBrowserTask", Name+"-sandbox-browser",
			size.MemoryMiB()+sandboximage.BrowserMemoryMiB, sandboximage.BrowserTarget, "browser")
	}
	return sb
}

// taskDefinition is a sandbox task definition of the smallest size's CPU
// and memoryMiB, whose container runs the image built from the
// Dockerfile's target (the default image when empty), logging to logs
// under streamPrefix.
func (sb *Sandbox) taskDefinition(stack awscdk.Stack, s Settings, logs awslogs.LogGroup, id, family string, memoryMiB int, target, streamPrefix string) awsecs.FargateTaskDefinition {
	task := awsecs.NewFargateTaskDefinition(stack, jsii.String(id), &awsecs.FargateTaskDefinitionProps{
		Family:              jsii.String(family),
		Cpu:                 jsii.Number(sandboxSize.CPU()),
		MemoryLimitMiB:      jsii.Number(memoryMiB),
		EphemeralStorageGiB: jsii.Number(s.EphemeralStorageGiB),
		RuntimePlatform: &awsecs.RuntimePlatform{
			CpuArchitecture:       awsecs.CpuArchitecture_ARM64(),
			OperatingSystemFamily: awsecs.OperatingSystemFamily_LINUX(),
		},
		ExecutionRole: sb.ExecutionRole,
	})
	// No task role: CDK makes one by default; the sandbox must have none,
	// so that nothing in it can reach AWS credentials.
	task.Node().TryRemoveChild(jsii.String("TaskRole"))
	task.Node().DefaultChild().(awsecs.CfnTaskDefinition).AddPropertyDeletionOverride(jsii.String("TaskRoleArn"))

	health := append([]string{"CMD"}, sandboximage.HealthCheck()...)
	image := &awsecs.AssetImageProps{
		File:     jsii.String("sandboximage/Dockerfile"),
		Platform: awsecrassets.Platform_LINUX_ARM64(),
		Exclude:  jsii.Strings(imageExcludes...),
	}
	if target != "" {
		image.Target = jsii.String(target)
	}
	task.AddContainer(jsii.String(ecs.DefaultContainer), &awsecs.ContainerDefinitionOptions{
		ContainerName: jsii.String(ecs.DefaultContainer),
		// The image's ENTRYPOINT and CMD run as built; the user is left
		// unset, as sandboximage.User says: tini and sandboxd start as
		// root and sandboxd drops to the agent user for every command.
		Image:        awsecs.ContainerImage_FromAsset(jsii.String(s.Root), image),
		Essential:    jsii.Bool(true),
		PortMappings: &[]*awsecs.PortMapping{{ContainerPort: jsii.Number(sandboximage.Port), Protocol: awsecs.Protocol_TCP}},
		HealthCheck: &awsecs.HealthCheck{
			Command:     jsii.Strings(health...),
			Interval:    awscdk.Duration_Seconds(jsii.Number(10)),
			Timeout:     awscdk.Duration_Seconds(jsii.Number(3)),
			StartPeriod: awscdk.Duration_Seconds(jsii.Number(5)),
			Retries:     jsii.Number(3),
		},
		Logging: awsecs.LogDriver_AwsLogs(&awsecs.AwsLogDriverProps{StreamPrefix: jsii.String(streamPrefix), LogGroup: logs}),
	})
	return task
}
