// Package identity maps the client certificate a caller of the Temporal frontend presented to the roles
// of ops/temporal/identities.yaml, and authorizes each call with Temporal's default authorizer plus one
// narrower role, worker, which the default authorizer does not grant anything (it ranks below reader,
// while polling needs writer).
package identity

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"

	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/log/tag"
	"gopkg.in/yaml.v3"
)

// Grant is what one certificate may do: a role on every namespace and the cluster's own APIs, and a role on
// the job's namespace.
type Grant struct {
	System    authorization.Role
	Namespace authorization.Role
}

// Policy maps a certificate's common name to its grant; a name it does not list has no role at all.
type Policy struct {
	// The namespace that a grant's `namespace` role applies to.
	Namespace string
	Grants    map[string]Grant
}

var roleNames = map[string]authorization.Role{
	"worker": authorization.RoleWorker,
	"reader": authorization.RoleReader,
	"writer": authorization.RoleWriter,
	"admin":  authorization.RoleAdmin,
}

func parseRole(who, field, name string) (authorization.Role, error) {
	if name == "" {
		return authorization.RoleUndefined, nil
	}
	role, ok := roleNames[name]
	if !ok {
		return 0, fmt.Errorf("identity %q: %s role %q is not one of worker, reader, writer, admin", who, field, name)
	}
	return role, nil
}

// Load reads a policy file: `identities: {<common name>: {system: <role>, namespace: <role>}}`.
func Load(file, namespace string) (*Policy, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("the identities file: %w", err)
	}
	var doc struct {
		Identities map[string]struct {
			System    string `yaml:"system"`
			Namespace string `yaml:"namespace"`
		} `yaml:"identities"`
	}
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	dec.KnownFields(true)
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("the identities file %s: %w", file, err)
	}
	if len(doc.Identities) == 0 {
		return nil, fmt.Errorf("the identities file %s lists no identity: every caller would be refused", file)
	}
	policy := &Policy{Namespace: namespace, Grants: map[string]Grant{}}
	for name, entry := range doc.Identities {
		system, err := parseRole(name, "system", entry.System)
		if err != nil {
			return nil, err
		}
		ns, err := parseRole(name, "namespace", entry.Namespace)
		if err != nil {
			return nil, err
		}
		policy.Grants[name] = Grant{System: system, Namespace: ns}
	}
	return policy, nil
}

// Describe lists the grants in one line, for the server's start log.
func (p *Policy) Describe() string {
	names := make([]string, 0, len(p.Grants))
	for name := range p.Grants {
		names = append(names, name)
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, name := range names {
		g := p.Grants[name]
		parts = append(parts, fmt.Sprintf("%s(system=%s, %s=%s)", name, roleName(g.System), p.Namespace, roleName(g.Namespace)))
	}
	return strings.Join(parts, " ")
}

func roleName(role authorization.Role) string {
	for name, r := range roleNames {
		if r == role {
			return name
		}
	}
	return "none"
}

// GetClaims implements authorization.ClaimMapper: the verified client certificate's common name, looked up.
// A caller with no certificate, or one the policy does not name, gets claims with no role.
func (p *Policy) GetClaims(info *authorization.AuthInfo) (*authorization.Claims, error) {
	claims := &authorization.Claims{}
	if info == nil || info.TLSSubject == nil {
		return claims, nil
	}
	claims.Subject = info.TLSSubject.CommonName
	grant, ok := p.Grants[claims.Subject]
	if !ok {
		return claims, nil
	}
	claims.System = grant.System
	if grant.Namespace != authorization.RoleUndefined {
		claims.Namespaces = map[string]authorization.Role{p.Namespace: grant.Namespace}
	}
	return claims, nil
}

// What a worker does with its namespace's task queues, and what it reads to do it: describe the namespace at
// start, page a long history when its cache misses; and for its stranded-cycles gauge, its deployment's
// versions, their pollers and a count of the cycles each holds. Nothing that starts, signals, ends, moves or
// lists workflows, nor routes the deployment.
var workerAPIs = map[string]bool{}

func init() {
	for _, method := range []string{
		"DescribeNamespace",
		"GetWorkflowExecutionHistory",
		"PollWorkflowTaskQueue",
		"RespondWorkflowTaskCompleted",
		"RespondWorkflowTaskFailed",
		"RespondQueryTaskCompleted",
		"ResetStickyTaskQueue",
		"PollActivityTaskQueue",
		"RecordActivityTaskHeartbeat",
		"RecordActivityTaskHeartbeatById",
		"RespondActivityTaskCompleted",
		"RespondActivityTaskCompletedById",
		"RespondActivityTaskFailed",
		"RespondActivityTaskFailedById",
		"RespondActivityTaskCanceled",
		"RespondActivityTaskCanceledById",
		"PollNexusTaskQueue",
		"RespondNexusTaskCompleted",
		"RespondNexusTaskFailed",
		"ShutdownWorker",
		"RecordWorkerHeartbeat",
		"FetchWorkerConfig",
		"DescribeWorkerDeployment",
		"DescribeTaskQueue",
		"CountWorkflowExecutions",
	} {
		workerAPIs["/temporal.api.workflowservice.v1.WorkflowService/"+method] = true
	}
}

type authorizer struct {
	base   authorization.Authorizer
	logger log.Logger
}

// NewAuthorizer is Temporal's default authorizer (reader < writer < admin, per namespace or system-wide,
// with the health checks open to every verified certificate), plus: the worker role allows the worker APIs
// in its namespace. Each refusal is logged with the certificate's name, so an operator sees who was refused.
func NewAuthorizer(logger log.Logger) authorization.Authorizer {
	return &authorizer{base: authorization.NewDefaultAuthorizer(), logger: logger}
}

func (a *authorizer) Authorize(
	ctx context.Context,
	claims *authorization.Claims,
	target *authorization.CallTarget,
) (authorization.Result, error) {
	result, err := a.base.Authorize(ctx, claims, target)
	if err != nil || result.Decision == authorization.DecisionAllow {
		return result, err
	}
	if claims != nil && workerAPIs[target.APIName] &&
		(claims.System|claims.Namespaces[target.Namespace])&authorization.RoleWorker != 0 {
		return authorization.Result{Decision: authorization.DecisionAllow}, nil
	}
	who := "a caller without a client certificate"
	if claims != nil && claims.Subject != "" {
		who = fmt.Sprintf("certificate CN=%s", claims.Subject)
	}
	reason := fmt.Sprintf("%s may not call %s", who, target.APIName)
	if target.Namespace != "" {
		reason += fmt.Sprintf(" in namespace %s", target.Namespace)
	}
	if a.logger != nil {
		a.logger.Warn("Permission denied by ops/temporal/identities.yaml", tag.NewStringTag("reason", reason))
	}
	return authorization.Result{Decision: authorization.DecisionDeny, Reason: reason}, nil
}
