package host

// Rediscover adds tools that this client's session discovered before
// elsewhere (on another replica, as a session store recorded them), in
// the order given, as tool_search would have: names already discovered,
// and names not in this session's catalog (a plugin removed since), are
// skipped.
func (s *Session) Rediscover(names []string) { s.discover(names) }
