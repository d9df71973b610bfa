package handlers

import (
	"context"
	"strings"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/hashlists"
	"github.com/contenteval/contenteval/gen"
)

// The hash-list operations (docs/api.md#hash-lists): admin keys only, lists
// of the caller's account plus the read-only operator-wide ones.

func toAPIHashList(l *domain.HashList, def domain.HashBands) gen.HashList {
	b, isDefault := def, l.Bands == nil
	if l.Bands != nil {
		b = *l.Bands
	}
	return gen.HashList{
		ListId: l.ID, Name: l.Name, Kind: gen.HashListKind(l.Kind), Mode: gen.HashListMode(l.Mode),
		Bands:        gen.HashBands{Exact: int32(b.Exact), High: int32(b.High), Medium: int32(b.Medium), Low: int32(b.Low)},
		BandsDefault: &isDefault, FloodLimit: int32(l.FloodLimit), OperatorWide: l.AccountID == "",
		HashCount: l.Count, Created: l.Created, Updated: l.Updated,
	}
}

func toAPIHashEntry(e *domain.HashListEntry) gen.HashListEntry {
	out := gen.HashListEntry{Hash: e.Hex, Source: e.Source, Note: e.Note, State: gen.HashState(e.State), MatchCount: e.MatchCount,
		Created: e.Created}
	if !e.LastMatched.IsZero() {
		t := e.LastMatched
		out.LastMatched = &t
	}
	return out
}

func fromAPIBands(b *gen.HashBands) *domain.HashBands {
	if b == nil {
		return nil
	}
	return &domain.HashBands{Exact: int(b.Exact), High: int(b.High), Medium: int(b.Medium), Low: int(b.Low)}
}

func (s *Server) apiHashList(l *domain.HashList) gen.HashList {
	return toAPIHashList(l, s.deps.HashLists.DefaultBands())
}

// ListHashLists lists the lists the account sees.
func (s *Server) ListHashLists(ctx context.Context, _ gen.ListHashListsRequestObject) (gen.ListHashListsResponseObject, error) {
	ls, err := s.deps.HashLists.List(ctx, AccountFrom(ctx).ID)
	if err != nil {
		return nil, err
	}
	out := make([]gen.HashList, len(ls))
	for i, l := range ls {
		out[i] = s.apiHashList(l)
	}
	return gen.ListHashLists200JSONResponse{HashLists: out}, nil
}

// CreateHashList creates a list of the account.
func (s *Server) CreateHashList(ctx context.Context, req gen.CreateHashListRequestObject) (gen.CreateHashListResponseObject, error) {
	in := hashlists.NewList{Name: req.Body.Name, Kind: domain.HashKind(req.Body.Kind), Bands: fromAPIBands(req.Body.Bands)}
	if req.Body.Mode != nil {
		in.Mode = domain.HashListMode(*req.Body.Mode)
	}
	if req.Body.FloodLimit != nil {
		in.FloodLimit = int(*req.Body.FloodLimit)
	}
	l, err := s.deps.HashLists.Create(ctx, AccountFrom(ctx).ID, in)
	if err != nil {
		return nil, err
	}
	return gen.CreateHashList200JSONResponse{HashList: s.apiHashList(l)}, nil
}

// GetHashList returns a list the account sees.
func (s *Server) GetHashList(ctx context.Context, req gen.GetHashListRequestObject) (gen.GetHashListResponseObject, error) {
	l, err := s.deps.HashLists.Get(ctx, AccountFrom(ctx).ID, req.ListId)
	if err != nil {
		return nil, err
	}
	return gen.GetHashList200JSONResponse{HashList: s.apiHashList(l)}, nil
}

// UpdateHashList changes a list of the account.
func (s *Server) UpdateHashList(ctx context.Context, req gen.UpdateHashListRequestObject) (gen.UpdateHashListResponseObject, error) {
	p := hashlists.Patch{Name: req.Body.Name, Bands: fromAPIBands(req.Body.Bands)}
	if req.Body.Mode != nil {
		m := domain.HashListMode(*req.Body.Mode)
		p.Mode = &m
	}
	if req.Body.FloodLimit != nil {
		f := int(*req.Body.FloodLimit)
		p.FloodLimit = &f
	}
	l, err := s.deps.HashLists.Update(ctx, AccountFrom(ctx).ID, req.ListId, p)
	if err != nil {
		return nil, err
	}
	return gen.UpdateHashList200JSONResponse{HashList: s.apiHashList(l)}, nil
}

// DeleteHashList deletes a list of the account.
func (s *Server) DeleteHashList(ctx context.Context, req gen.DeleteHashListRequestObject) (gen.DeleteHashListResponseObject, error) {
	if err := s.deps.HashLists.Delete(ctx, AccountFrom(ctx).ID, req.ListId); err != nil {
		return nil, err
	}
	return gen.DeleteHashList200JSONResponse{}, nil
}

// ListHashListHashes returns a page of a list's hashes.
func (s *Server) ListHashListHashes(ctx context.Context, req gen.ListHashListHashesRequestObject) (gen.ListHashListHashesResponseObject, error) {
	size := 100
	if p := req.Params.PageSize; p != nil && *p > 0 {
		size = min(int(*p), 1000)
	}
	after := ""
	if req.Params.PageToken != nil {
		after = *req.Params.PageToken
	}
	es, err := s.deps.HashLists.Hashes(ctx, AccountFrom(ctx).ID, req.ListId, after, size+1)
	if err != nil {
		return nil, err
	}
	out := gen.ListHashListHashes200JSONResponse{Hashes: make([]gen.HashListEntry, 0, min(len(es), size))}
	for i, e := range es {
		if i == size {
			next := es[size-1].Hex
			out.NextPageToken = &next
			break
		}
		out.Hashes = append(out.Hashes, toAPIHashEntry(e))
	}
	return out, nil
}

// AddHashListHashes adds hashes to a list of the account.
func (s *Server) AddHashListHashes(ctx context.Context, req gen.AddHashListHashesRequestObject) (gen.AddHashListHashesResponseObject, error) {
	in := make([]hashlists.NewHash, len(req.Body.Hashes))
	for i, h := range req.Body.Hashes {
		in[i] = hashlists.NewHash{Hash: h.Hash, Source: deref(h.Source), Note: deref(h.Note)}
	}
	l, n, err := s.deps.HashLists.Add(ctx, AccountFrom(ctx).ID, req.ListId, in)
	if err != nil {
		return nil, err
	}
	return gen.AddHashListHashes200JSONResponse{HashList: s.apiHashList(l), Added: int64(n)}, nil
}

// ImportHashList adds the hashes of a file to a list of the account.
func (s *Server) ImportHashList(ctx context.Context, req gen.ImportHashListRequestObject) (gen.ImportHashListResponseObject, error) {
	if req.Body == nil {
		return nil, domain.InvalidField("file", "the body is empty")
	}
	format := ""
	if req.Params.Format != nil {
		format = string(*req.Params.Format)
	}
	res, err := s.deps.HashLists.Import(ctx, AccountFrom(ctx).ID, req.ListId, format, strings.NewReader(*req.Body))
	if err != nil {
		return nil, err
	}
	return gen.ImportHashList200JSONResponse{HashList: s.apiHashList(res.List), Added: int64(res.Added), Skipped: ptr(int64(res.Skipped))}, nil
}

// DeleteHashListHash removes a hash from a list of the account.
func (s *Server) DeleteHashListHash(ctx context.Context, req gen.DeleteHashListHashRequestObject) (gen.DeleteHashListHashResponseObject, error) {
	if err := s.deps.HashLists.DeleteHash(ctx, AccountFrom(ctx).ID, req.ListId, req.Hash); err != nil {
		return nil, err
	}
	return gen.DeleteHashListHash200JSONResponse{}, nil
}

func (s *Server) setHashState(ctx context.Context, listID, hash, action string) (gen.HashListEntryResponse, error) {
	e, err := s.deps.HashLists.SetState(ctx, AccountFrom(ctx).ID, listID, hash, action)
	if err != nil {
		return gen.HashListEntryResponse{}, err
	}
	return gen.HashListEntryResponse{Hash: toAPIHashEntry(e)}, nil
}

// DisableHashListHash disables one hash.
func (s *Server) DisableHashListHash(ctx context.Context, req gen.DisableHashListHashRequestObject) (gen.DisableHashListHashResponseObject, error) {
	r, err := s.setHashState(ctx, req.ListId, req.Hash, hashlists.ActionDisable)
	if err != nil {
		return nil, err
	}
	return gen.DisableHashListHash200JSONResponse(r), nil
}

// EnableHashListHash enables a disabled hash.
func (s *Server) EnableHashListHash(ctx context.Context, req gen.EnableHashListHashRequestObject) (gen.EnableHashListHashResponseObject, error) {
	r, err := s.setHashState(ctx, req.ListId, req.Hash, hashlists.ActionEnable)
	if err != nil {
		return nil, err
	}
	return gen.EnableHashListHash200JSONResponse(r), nil
}

// ConfirmHashListHash confirms a hash, ending its quarantine.
func (s *Server) ConfirmHashListHash(ctx context.Context, req gen.ConfirmHashListHashRequestObject) (gen.ConfirmHashListHashResponseObject, error) {
	r, err := s.setHashState(ctx, req.ListId, req.Hash, hashlists.ActionConfirm)
	if err != nil {
		return nil, err
	}
	return gen.ConfirmHashListHash200JSONResponse(r), nil
}
