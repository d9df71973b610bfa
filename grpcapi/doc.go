// Package grpcapi is the Clavata gRPC adapter (docs/api.md#grpc): the
// clavata.gateway.v1.GatewayService the official Clavata SDKs call
// (Evaluate, CreateJob, GetJob, ListJobs), served by grpc-go's own transport
// beside the REST server on the same port. Like handlers, it only
// translates: the generated messages of gen/clavatapb in, the same domain
// service calls REST makes, messages or a status out. Authentication, rate
// limits, account-type gating, input limits, metrics and request logs run in
// its interceptors, and every failure is turned into a gRPC status in one
// place (toStatus), with the codes of docs/api.md#error-bodies.
// It never imports persistence or handlers.
package grpcapi
