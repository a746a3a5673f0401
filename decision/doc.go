// Package decision decides what happens to a change of an object Git
// manages, for the admission webhook and the drift watcher alike: it builds
// the policy's input from what they know of the change, asks the policy
// (data.driftguard.decision), and applies enforcement, always in this order:
//
//  1. The object's driftguard.io/enforcement annotation in Git is "off":
//     the change is allowed (rule enforcement-off) and kept; the policy is
//     not asked, so neither a policy nor a policy error can deny or revert
//     it.
//  2. The policy decides. An error is returned to the caller, whose failure
//     policy applies (the webhook's --failure-policy; the drift watcher
//     reverts).
//  3. A deny at admission (CREATE, UPDATE, DELETE, a subresource) is
//     softened by the object's annotation (revert, warn or deny) or, without
//     one, by the Guard's spec.enforcement (warn admits with a warning,
//     dryrun admits silently and self-heal reverts). After the fact (DRIFT)
//     the change has happened: a deny is a revert whatever the mode.
//  4. A policy's allow or warn with "temporary": true is kept only for the
//     Guard's breakGlassTTL (Result.Temporary).
//
// The Result carries the action taken and, when enforcement changed it, the
// policy's own action.
package decision
