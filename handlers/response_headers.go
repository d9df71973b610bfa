package handlers

import (
	"github.com/contenteval/contenteval/domain/access"
	"github.com/labstack/echo/v4"
)

// assignRequestID answers every request under an X-Request-Id chosen as
// gRPC chooses its x-request-id (access.RequestID): the client's when it is
// a safe token, a new one otherwise, so that it can neither forge log lines
// nor inject a header. The request's header is replaced too: the request
// logger reads the id from there.
func assignRequestID(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		id := access.RequestID(req.Header.Get(echo.HeaderXRequestID))
		req.Header.Set(echo.HeaderXRequestID, id)
		c.Response().Header().Set(echo.HeaderXRequestID, id)
		return next(c)
	}
}

// noSniff makes browsers take every answer as the type it declares: the
// batch output and the other stored bytes we serve are the clients' content,
// which a sniffing browser could otherwise run as HTML or script.
func noSniff(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		c.Response().Header().Set(echo.HeaderXContentTypeOptions, "nosniff")
		return next(c)
	}
}

// DocsContentSecurityPolicy is the policy of the API reference page (/docs):
// Redoc from our own origin, with the inline styles it generates, the
// search worker it starts from a blob: URL, and the spec it fetches; no
// framing, forms or base URL. The Redocly logo Redoc links from its CDN is
// blocked on purpose: the page fetches nothing from elsewhere.
const DocsContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; " +
	"img-src 'self' data:; font-src 'self' data:; connect-src 'self'; worker-src blob:; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// docsHeaders are the security headers of the API reference page.
func docsHeaders(c echo.Context) {
	h := c.Response().Header()
	h.Set(echo.HeaderContentSecurityPolicy, DocsContentSecurityPolicy)
	h.Set(echo.HeaderXFrameOptions, "DENY")
	h.Set("Referrer-Policy", "no-referrer")
}
