package identity

import (
	"context"
	"crypto/x509/pkix"
	"os"
	"path/filepath"
	"testing"

	"go.temporal.io/server/common/authorization"
)

const ws = "/temporal.api.workflowservice.v1.WorkflowService/"
const ops = "/temporal.api.operatorservice.v1.OperatorService/"

// The repository's own policy file, as the server loads it.
func repositoryPolicy(t *testing.T) *Policy {
	t.Helper()
	p, err := Load(filepath.Join("..", "..", "identities.yaml"), "default")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func allowed(t *testing.T, p *Policy, cn *string, api, namespace string) bool {
	t.Helper()
	info := &authorization.AuthInfo{}
	if cn != nil {
		info.TLSSubject = &pkix.Name{CommonName: *cn}
	}
	claims, err := p.GetClaims(info)
	if err != nil {
		t.Fatal(err)
	}
	res, err := NewAuthorizer(nil).Authorize(context.Background(), claims, &authorization.CallTarget{APIName: api, Namespace: namespace})
	if err != nil {
		t.Fatal(err)
	}
	return res.Decision == authorization.DecisionAllow
}

func TestEachIdentityDoesItsJobOnly(t *testing.T) {
	p := repositoryPolicy(t)
	name := func(s string) *string { return &s }
	cases := []struct {
		cn        *string
		api       string
		namespace string
		want      bool
	}{
		{name("worker"), ws + "PollWorkflowTaskQueue", "default", true},
		{name("worker"), ws + "RespondActivityTaskCompleted", "default", true},
		{name("worker"), ws + "DescribeNamespace", "default", true},
		{name("worker"), ws + "GetWorkflowExecutionHistory", "default", true},
		{name("worker"), ws + "GetSystemInfo", "", true},
		{name("worker"), ws + "PollWorkflowTaskQueue", "other", false},
		{name("worker"), ws + "StartWorkflowExecution", "default", false},
		{name("worker"), ws + "TerminateWorkflowExecution", "default", false},
		{name("worker"), ws + "ListWorkflowExecutions", "default", false},
		{name("worker"), ws + "CountWorkflowExecutions", "default", true},
		{name("worker"), ws + "DescribeWorkerDeployment", "default", true},
		{name("worker"), ws + "DescribeTaskQueue", "default", true},
		{name("worker"), ws + "CountWorkflowExecutions", "other", false},
		{name("worker"), ws + "SetWorkerDeploymentCurrentVersion", "default", false},
		{name("worker"), ws + "UpdateWorkflowExecutionOptions", "default", false},
		{name("worker"), ws + "CreateSchedule", "default", false},
		{name("cli"), ws + "CreateSchedule", "default", true},
		{name("cli"), ws + "TerminateWorkflowExecution", "default", true},
		{name("cli"), ops + "AddSearchAttributes", "default", true},
		{name("cli"), ws + "RegisterNamespace", "default", true},
		{name("cli"), ws + "StartWorkflowExecution", "other", false},
		{name("cli"), ws + "ListNamespaces", "", false},
		{name("client"), ws + "StartWorkflowExecution", "default", true},
		{name("client"), ops + "AddSearchAttributes", "default", true},
		{name("ui-client"), ws + "ListWorkflowExecutions", "default", true},
		{name("ui-client"), ws + "ListNamespaces", "", true},
		{name("ui-client"), ws + "DescribeSchedule", "default", true},
		{name("ui-client"), ws + "StartWorkflowExecution", "default", false},
		{name("ui-client"), ws + "TerminateWorkflowExecution", "default", false},
		{name("ui-client"), ws + "PollWorkflowTaskQueue", "default", false},
		{name("support"), ws + "ListWorkflowExecutions", "default", true},
		{name("support"), ws + "GetWorkflowExecutionHistory", "default", true},
		{name("support"), ws + "DescribeWorkflowExecution", "default", true},
		{name("support"), ws + "StartWorkflowExecution", "default", false},
		{name("support"), ws + "TerminateWorkflowExecution", "default", false},
		{name("support"), ws + "ListWorkflowExecutions", "other", false},
		{name("support"), ws + "ListNamespaces", "", false},
		{name("temporal"), ws + "StartWorkflowExecution", "default", true},
		{name("temporal"), ws + "StartWorkflowExecution", "temporal-system", true},
		{name("relay"), ws + "DescribeNamespace", "default", false},
		{name("relay"), ws + "PollWorkflowTaskQueue", "default", false},
		{name("postgres"), ws + "ListWorkflowExecutions", "default", false},
		{name("kafka"), ws + "ListNamespaces", "", false},
		{name("ui"), ws + "ListNamespaces", "", false},
		{name("relay"), ws + "GetSystemInfo", "", true},
		{nil, ws + "DescribeNamespace", "default", false},
	}
	for _, c := range cases {
		cn := "(none)"
		if c.cn != nil {
			cn = *c.cn
		}
		if got := allowed(t, p, c.cn, c.api, c.namespace); got != c.want {
			t.Errorf("%s calling %s in %q: allowed=%v, want %v", cn, c.api, c.namespace, got, c.want)
		}
	}
}

func TestRefusalNamesTheCertificate(t *testing.T) {
	p := repositoryPolicy(t)
	claims, _ := p.GetClaims(&authorization.AuthInfo{TLSSubject: &pkix.Name{CommonName: "relay"}})
	res, _ := NewAuthorizer(nil).Authorize(context.Background(), claims,
		&authorization.CallTarget{APIName: ws + "DescribeNamespace", Namespace: "default"})
	want := "certificate CN=relay may not call " + ws + "DescribeNamespace in namespace default"
	if res.Decision != authorization.DecisionDeny || res.Reason != want {
		t.Fatalf("got %v %q, want deny %q", res.Decision, res.Reason, want)
	}
}

func TestLoadRefusesUnknownRolesAndFields(t *testing.T) {
	dir := t.TempDir()
	for _, text := range []string{
		"identities:\n  worker: { namespace: poller }\n",
		"identities:\n  worker: { namespaces: worker }\n",
		"identities: {}\n",
	} {
		file := filepath.Join(dir, "identities.yaml")
		if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(file, "default"); err == nil {
			t.Errorf("loaded %q without an error", text)
		}
	}
}
