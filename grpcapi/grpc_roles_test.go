package grpcapi

import (
	"testing"

	"github.com/contenteval/contenteval/domain"
	pb "github.com/contenteval/contenteval/gen/clavatapb"
	"github.com/stretchr/testify/require"
)

// TestMethodRoles keeps methods complete: every RPC of the service has an
// entry with its key roles, so a new method cannot be served without
// deciding who may call it, and no entry names a method the service lacks.
func TestMethodRoles(t *testing.T) {
	sd := pb.GatewayService_ServiceDesc
	served := map[string]bool{}
	for _, m := range sd.Methods {
		served["/"+sd.ServiceName+"/"+m.MethodName] = true
	}
	for _, s := range sd.Streams {
		served["/"+sd.ServiceName+"/"+s.StreamName] = true
	}
	for name := range served {
		m, ok := methods[name]
		require.True(t, ok, "methods has no entry for %s", name)
		require.True(t, m.roles.Has(domain.RoleAdmin), "%s: admin keys may call everything", name)
	}
	for name := range methods {
		require.True(t, served[name], "methods names %s, which the service does not have", name)
	}
}
