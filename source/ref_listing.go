package source

import (
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// refListing is the last listing of one remote's references made with one
// set of credentials (it lives in the remoteRepo of a Request.CacheKey, so
// a listing is never reused across credentials). A Fetch whose
// Request.ListingMaxAge covers its age resolves with it instead of asking
// the remote again: the Guards of a repository reconciled within a short
// window (a push to a repository of many Guards, many Guards created at
// once) cost one listing, not one each. So does a Fetch whose
// Request.ListingSince is no later than when the listing began. A push drops it (forget), so a
// Fetch after a push notification always sees the pushed revision.
type refListing struct {
	mu   sync.Mutex
	refs []*plumbing.Reference // nil: none to reuse
	at   time.Time             // when the listing began
	// gen counts forgets: a listing that began before the last one is
	// returned to its caller but not kept.
	gen uint64
}

// get returns the kept listing when it began at most maxAge ago (maxAge >
// 0) or at or after since (not zero), else lists with list and keeps the
// result. Listings are never modified after they are kept: callers only
// read them.
func (l *refListing) get(maxAge time.Duration, since time.Time, list func() ([]*plumbing.Reference, error)) ([]*plumbing.Reference, error) {
	l.mu.Lock()
	if l.refs != nil && ((maxAge > 0 && time.Since(l.at) <= maxAge) || (!since.IsZero() && !l.at.Before(since))) {
		refs := l.refs
		l.mu.Unlock()
		return refs, nil
	}
	gen := l.gen
	l.mu.Unlock()

	began := time.Now()
	refs, err := list()
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.gen == gen {
		if refs == nil {
			refs = []*plumbing.Reference{}
		}
		l.refs, l.at = refs, began
	}
	return refs, nil
}

// forget drops the kept listing and any that is being made.
func (l *refListing) forget() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.gen++
	l.refs = nil
}

// ForgetListings drops the kept ref listings of every remote that is the
// same repository as one of urls (SameRepository), with every set of
// credentials: the next Fetch of it lists the remote again. A push
// notification calls it before the Guards of the pushed repositories are
// reconciled.
func (f *GitFetcher) ForgetListings(urls []string) {
	f.mu.Lock()
	repos := make([]*remoteRepo, 0, len(f.repos))
	for _, rr := range f.repos {
		repos = append(repos, rr)
	}
	f.mu.Unlock()
	for _, rr := range repos {
		for _, u := range urls {
			if SameRepository(rr.url, u) {
				rr.listing.forget()
				break
			}
		}
	}
}
