// Package movielens converts the MovieLens-100K ratings (GroupLens) into
// click-through-rate samples: label = rating >= 4, user fields shared by
// every rating of a user, item fields per rating. It has two modes: the
// plain mode (Convert) and the sequence mode (Sequences), which adds the
// user's behaviour history for sequence models (DIN, DIEN).
//
// # Plain mode
//
// Fields (the same numbers in both outputs):
//
//	level 1 (user): 0 user id, 1 age, 2 gender, 3 occupation, 4 zip code
//	level 0 (item): 5 item id, 6 genres (a bag: one feature per genre flag set)
//
// Tokens are the raw values (genres by their index 0..18), so no token holds
// ':', '=' or a blank. Ratings are kept in the file's order (ua.base and
// ua.test are sorted by user), and each run of one user's consecutive
// ratings becomes one sample group: "group 2", the user's level-1 line, one
// level-0 line per rating. The libFFM output writes the same samples
// flattened ("label 0:u 1:age ... 5:item 6:g 6:g"), for peers that read
// libFFM; reading either file gives the same feature ids.
//
// # Sequence mode
//
// Sequences reads all ratings (u.data) and gives every rating the user's
// history. Fields 0-6 are those of the plain mode, and
//
//	level 0 (item): 7 the item's main genre (its first genre flag; "0",
//	                the unknown genre, for an item without a flag)
//	level 1 (user): 8  history item ids (a sequence, oldest first; tokens of field 5)
//	                9  their main genres (aligned with 8; tokens of field 7)
//	                10 negative history item ids (aligned with 8; tokens of field 5)
//	                11 their main genres (aligned with 10; tokens of field 7)
//
// A sequence field lists its items as repeated features of the field, in
// order ("8:242:1 8:51:1 8:302:1" is the history 242, 51, 302). Fields 8 and
// 10 use the tokens of field 5, fields 9 and 11 those of field 7, so a
// reader that hashes a history field in the namespace of its target field
// (SequenceTargets) gives a movie one id as a candidate and in a history.
// The invariants:
//
//  1. The ratings of a user are ordered by timestamp, ties by item id
//     (numerically); samples come user by user (users by numeric id), each
//     user's in that order.
//  2. The history of a rating is the user's last History movies (at most)
//     rated at a timestamp strictly earlier than its own, oldest first.
//     Ratings of one second (half of MovieLens's ratings share their second
//     with the user's previous one) do not see each other: the site gives
//     no order among them, and one would leak into the other's history.
//     The first ratings of a user have an empty history (fields 8-11
//     absent).
//  3. The negative of a rated movie (field 10) is a movie the user never
//     rated (in all of u.data), drawn uniformly with a counter-based
//     stream keyed by (Seed, user, movie): the same movie of the same user
//     has the same negative in every history it appears in.
//  4. The split is by time, one global cutoff for all users: with the n
//     ratings sorted by timestamp, the cutoff is the timestamp at 0-based
//     position n - ceil(n/5); test holds the ratings with a
//     timestamp >= cutoff, train the others (ties at the cutoff go to test,
//     so test holds at least 20%). Every train timestamp < cutoff <= every
//     test timestamp. The histories of test ratings include the user's
//     train ratings: the past is known when serving.
//  5. The ratings of one user and one second have identical histories and
//     form one sample group (level 1: fields 0-4 and 8-11; level 0 per
//     rating: label and fields 5-7); the libFFM output writes the same
//     samples flattened (user line, then item line), and both give the same
//     feature ids when read.
//
// Command movielens -history N writes seq.base.{group,libffm} (train) and
// seq.test.{group,libffm}, named after the plain mode's ua.base and ua.test.
// With the recommended History 50 the real data splits at the cutoff
// 889237269 (1998-03-07 02:21:09 UTC) into 79,999 train ratings (39,637
// groups, 1,677 without history, mean history 38.5) and 20,001 test
// ratings (9,802 groups, 458 without history, mean history 38.3); a test
// CTR of 0.565 (TestSequencesRealData prints the counts).
//
// It is cmd/movielens's library (only that command imports it).
//
// # Files
//
//   - movielens.go: Open (the data set's files), Dataset.Convert: the plain mode.
//   - seq.go: SeqOptions, Dataset.Sequences: the sequence mode, its time split and histories; SequenceTargets.
package movielens
