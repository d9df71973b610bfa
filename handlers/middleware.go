package handlers

import (
	"context"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/access"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
)

// operation is what the middleware needs to know of one API operation; it is
// read from openapi.yaml once, so the spec stays the single source of truth
// for security and account-type gating.
type operation struct {
	id           string
	method       string
	echoPath     string
	secured      bool
	accountType  domain.AccountType // "" when both types may call it
	roles        access.RoleSet
	spec         *openapi3.Operation
	queryAliases map[string]string // snake or camel spelling -> declared name
	queryMaximum map[string]int64  // integer query parameter -> its declared maximum
	input        inputRules
}

type routeKey struct{ method, path string }

// operations indexes the spec's API operations by Echo route (method, path
// with :params), skipping the operational routes served outside the group.
func operations(spec *openapi3.T) map[routeKey]*operation {
	ops := map[routeKey]*operation{}
	for path, item := range spec.Paths.Map() {
		for method, op := range item.Operations() {
			if hasTag(op, "operations") {
				continue
			}
			o := &operation{id: lowerFirst(op.OperationID), method: method, echoPath: echoPath(path), spec: op, secured: true}
			o.roles = operationRoles[o.id]
			sec := op.Security
			if sec == nil {
				sec = &spec.Security
			}
			o.secured = len(*sec) > 0
			if v, ok := op.Extensions["x-account-type"].(string); ok {
				o.accountType = domain.AccountType(v)
			}
			o.queryAliases, o.queryMaximum = map[string]string{}, map[string]int64{}
			for _, p := range op.Parameters {
				if p.Value.In != openapi3.ParameterInQuery {
					continue
				}
				name := p.Value.Name
				o.queryAliases[snakeCase(name)] = name
				o.queryAliases[camelCase(name)] = name
				delete(o.queryAliases, name)
				if s := p.Value.Schema; s != nil && s.Value != nil && s.Value.Type.Is(openapi3.TypeInteger) && s.Value.Max != nil {
					o.queryMaximum[name] = int64(*s.Value.Max)
				}
			}
			ops[routeKey{method, o.echoPath}] = o
		}
	}
	return ops
}

// lowerFirst undoes oapi-codegen's capitalisation of operation ids in the
// embedded spec, so logs and metrics use the ids of openapi.yaml.
func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

func hasTag(op *openapi3.Operation, tag string) bool {
	for _, t := range op.Tags {
		if t == tag {
			return true
		}
	}
	return false
}

func echoPath(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '{':
			b.WriteByte(':')
		case '}':
		default:
			b.WriteByte(p[i])
		}
	}
	return b.String()
}

const (
	ctxOperation = "contenteval.operation"
	ctxAccount   = "contenteval.account"
)

type accountKey struct{}

type callerKey struct{}

// AccountFrom returns the authenticated account of a handler's context.
func AccountFrom(ctx context.Context) *domain.Account {
	a, _ := ctx.Value(accountKey{}).(*domain.Account)
	return a
}

// CallerFrom returns the authenticated key of a handler's context (its role
// and name); ok is false on an unsecured operation.
func CallerFrom(ctx context.Context) (c access.Caller, ok bool) {
	c, ok = ctx.Value(callerKey{}).(access.Caller)
	return c, ok
}

func operationOf(c echo.Context) *operation {
	o, _ := c.Get(ctxOperation).(*operation)
	return o
}

// resolveOperation finds the spec operation of the matched route. Unknown
// routes have none and fall through to Echo's 404/405.
func (s *Server) resolveOperation(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if o := s.ops[routeKey{c.Request().Method, c.Path()}]; o != nil {
			c.Set(ctxOperation, o)
		}
		return next(c)
	}
}

// authenticate verifies the bearer key of secured operations, applies the
// account's rate limit, the operation's key roles (operationRoles) and its
// account type, in that order, so a caller learns first who it is, then how
// fast, then what it may call.
func (s *Server) authenticate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		o := operationOf(c)
		if o == nil || !o.secured {
			return next(c)
		}
		req := c.Request()
		caller, wait, err := access.Admit(req.Context(), s.deps.Keys, s.deps.Limiter,
			req.Header.Get(echo.HeaderAuthorization), o.id, o.roles, o.accountType)
		if caller.Account != nil {
			c.Set(ctxAccount, caller.Account)
		}
		if wait > 0 {
			return retryAfterError{err: err.(*domain.Error), seconds: int(wait / time.Second)}
		}
		if err != nil {
			return err
		}
		ctx := context.WithValue(req.Context(), accountKey{}, caller.Account)
		c.SetRequest(req.WithContext(context.WithValue(ctx, callerKey{}, caller)))
		return next(c)
	}
}

func requestID(c echo.Context) string {
	return c.Response().Header().Get(echo.HeaderXRequestID)
}

// requestLogger writes one JSON log line per request.
func (s *Server) requestLogger() echo.MiddlewareFunc {
	return middleware.RequestLoggerWithConfig(middleware.RequestLoggerConfig{
		LogStatus: true, LogLatency: true, LogMethod: true, LogURIPath: true, LogRequestID: true,
		HandleError: true,
		LogValuesFunc: func(c echo.Context, v middleware.RequestLoggerValues) error {
			op := "unknown"
			if o := operationOf(c); o != nil {
				op = o.id
			}
			attrs := []slog.Attr{
				slog.String("request_id", v.RequestID), slog.String("method", v.Method),
				slog.String("path", v.URIPath), slog.String("operation", op),
				slog.Int("status", v.Status), slog.Duration("latency", v.Latency),
			}
			if a, ok := c.Get(ctxAccount).(*domain.Account); ok {
				attrs = append(attrs, slog.String("account", a.ID))
			}
			s.log.LogAttrs(c.Request().Context(), slog.LevelInfo, "request", attrs...)
			return nil
		},
	})
}

func (s *Server) logPanic(c echo.Context, err error, stack []byte) error {
	s.log.Error("panic", "request_id", requestID(c), "error", err.Error(), "stack", string(stack))
	return err
}

// allowedMethods lists the methods the API serves on path (for 405 Allow).
func (s *Server) allowedMethods(path string) []string {
	var out []string
	for k := range s.ops {
		if routeMatches(k.path, path) {
			out = append(out, k.method)
		}
	}
	sort.Strings(out)
	return out
}

func routeMatches(pattern, path string) bool {
	ps, xs := strings.Split(pattern, "/"), strings.Split(path, "/")
	if len(ps) != len(xs) {
		return false
	}
	for i := range ps {
		if !strings.HasPrefix(ps[i], ":") && ps[i] != xs[i] {
			return false
		}
	}
	return true
}
