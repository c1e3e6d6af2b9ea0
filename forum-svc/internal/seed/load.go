package seed

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"

	"forumstats.local/forum-svc/internal/attachment"
	"forumstats.local/forum-svc/internal/auth"
	"forumstats.local/forum-svc/internal/conversation"
)

// Summary counts what a load wrote.
type Summary struct {
	Users, Conversations, Messages, ReadStates, APIKeys int
}

func (s Summary) String() string {
	return fmt.Sprintf("%d users, %d conversations, %d messages, %d read states, %d API keys",
		s.Users, s.Conversations, s.Messages, s.ReadStates, s.APIKeys)
}

// Load validates f against itself and the database, then writes it, all in one transaction: a
// refused file (*Error) or a failed write leaves the database as it was.
//
// Upsert rules: users, messages and API keys are upserted by their ids (the key by its hash). A
// conversation's title and starter are replaced, and its participants become exactly its starter
// and recipients (a participant kept keeps its read state; a new one has read nothing). Messages
// absent from the file are kept. read_state entries set last_read_date as given.
func Load(ctx context.Context, gdb *gorm.DB, f *File, now time.Time) (Summary, error) {
	var sum Summary
	err := gdb.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := validate(tx, f); err != nil {
			return err
		}
		var err error
		sum, err = write(ctx, tx, f, now)
		return err
	})
	return sum, err
}

// The longest username (bytes) and conversation title (characters) a file may hold. A title
// bound above the API's (conversation.MaxTitleLength) keeps the files of before it valid; counted
// in characters, it takes every title the API writes, in any script. A message may be as long as
// any forum lets one be (conversation.MaxMessageLength characters).
const (
	maxUsername = 100
	maxTitle    = 150
)

type checker struct {
	tx *gorm.DB

	users        map[int64]bool // in the file or the database
	fileConvs    map[int64]int  // conversation_id -> index in the file
	participants map[int64]map[int64]bool
}

func validate(tx *gorm.DB, f *File) error {
	c := &checker{tx: tx, users: map[int64]bool{}, fileConvs: map[int64]int{}, participants: map[int64]map[int64]bool{}}
	if _, err := f.Options.set(); err != nil {
		return refuse("options", "%s", err)
	}
	if f.Options != nil && f.Options.AttachmentExtensions != nil {
		if _, err := attachment.ParseExtensions(*f.Options.AttachmentExtensions); err != nil {
			return refuse("options", "%s", err)
		}
	}
	if err := c.checkUsers(f); err != nil {
		return err
	}
	if err := c.checkConversations(f); err != nil {
		return err
	}
	if err := c.checkReadState(f); err != nil {
		return err
	}
	return c.checkAPIKeys(f)
}

func (c *checker) checkUsers(f *File) error {
	seen := map[int64]int{}
	for i, u := range f.Users {
		path := fmt.Sprintf("users[%d]", i)
		if u.UserID <= 0 {
			return refuse(path, "user_id must be a positive integer")
		}
		if j, dup := seen[u.UserID]; dup {
			return refuse(path, "user_id %d appears twice (also users[%d])", u.UserID, j)
		}
		seen[u.UserID] = i
		if strings.TrimSpace(u.Username) == "" {
			return refuse(path, "username must not be empty")
		}
		if len(u.Username) > maxUsername {
			return refuse(path, "username is longer than %d bytes", maxUsername)
		}
		c.users[u.UserID] = true
	}
	// Every user referenced but not defined in the file must exist in the database.
	var refs []int64
	for _, conv := range f.Conversations {
		refs = append(refs, conv.UserID)
		refs = append(refs, conv.Recipients...)
		for _, m := range conv.Messages {
			refs = append(refs, m.UserID)
		}
	}
	for _, k := range f.APIKeys {
		if k.UserID != nil {
			refs = append(refs, *k.UserID)
		}
	}
	var missing []int64
	for _, id := range refs {
		if id > 0 && !c.users[id] {
			missing = append(missing, id)
		}
	}
	found, err := existing(c.tx, "SELECT user_id FROM users WHERE user_id IN ?", missing)
	if err != nil {
		return err
	}
	for _, id := range found {
		c.users[id] = true
	}
	return nil
}

func (c *checker) userRef(path, field string, id int64) error {
	if id <= 0 {
		return refuse(path, "%s must be a positive integer", field)
	}
	if !c.users[id] {
		return refuse(path, "%s %d does not exist", field, id)
	}
	return nil
}

func (c *checker) checkConversations(f *File) error {
	// Where the file's messages already live, and which file conversations already have messages.
	var messageIDs, convIDs []int64
	for _, conv := range f.Conversations {
		convIDs = append(convIDs, conv.ConversationID)
		for _, m := range conv.Messages {
			messageIDs = append(messageIDs, m.MessageID)
		}
	}
	homes, err := pairs(c.tx, "SELECT message_id, conversation_id FROM conversation_messages WHERE message_id IN ?", messageIDs)
	if err != nil {
		return err
	}
	home := map[int64]int64{}
	for _, p := range homes {
		home[p[0]] = p[1]
	}
	withMessages, err := existing(c.tx, "SELECT conversation_id FROM conversations WHERE message_count > 0 AND conversation_id IN ?", convIDs)
	if err != nil {
		return err
	}

	seenMsg := map[int64]string{}
	for i, conv := range f.Conversations {
		path := fmt.Sprintf("conversations[%d]", i)
		if conv.ConversationID <= 0 {
			return refuse(path, "conversation_id must be a positive integer")
		}
		if j, dup := c.fileConvs[conv.ConversationID]; dup {
			return refuse(path, "conversation_id %d appears twice (also conversations[%d])", conv.ConversationID, j)
		}
		c.fileConvs[conv.ConversationID] = i
		if strings.TrimSpace(conv.Title) == "" {
			return refuse(path, "title must not be empty")
		}
		if utf8.RuneCountInString(conv.Title) > maxTitle {
			return refuse(path, "title is longer than %d characters", maxTitle)
		}
		if err := c.userRef(path, "user_id", conv.UserID); err != nil {
			return err
		}
		members := map[int64]bool{conv.UserID: true}
		for j, r := range conv.Recipients {
			rpath := fmt.Sprintf("%s.recipients[%d]", path, j)
			if err := c.userRef(rpath, "user_id", r); err != nil {
				return err
			}
			if r == conv.UserID {
				return refuse(rpath, "user_id %d is the starter of the conversation", r)
			}
			if members[r] {
				return refuse(rpath, "user_id %d appears twice", r)
			}
			members[r] = true
		}
		c.participants[conv.ConversationID] = members
		if len(conv.Messages) == 0 && !slices.Contains(withMessages, conv.ConversationID) {
			return refuse(path, "a conversation needs at least one message")
		}
		for j, m := range conv.Messages {
			mpath := fmt.Sprintf("%s.messages[%d]", path, j)
			if m.MessageID <= 0 {
				return refuse(mpath, "message_id must be a positive integer")
			}
			if other, dup := seenMsg[m.MessageID]; dup {
				return refuse(mpath, "message_id %d appears twice (also %s)", m.MessageID, other)
			}
			seenMsg[m.MessageID] = mpath
			if h, ok := home[m.MessageID]; ok && h != conv.ConversationID {
				return refuse(mpath, "message_id %d belongs to conversation %d", m.MessageID, h)
			}
			if err := c.userRef(mpath, "user_id", m.UserID); err != nil {
				return err
			}
			if !members[m.UserID] {
				return refuse(mpath, "user_id %d is not a participant of the conversation", m.UserID)
			}
			if strings.TrimSpace(m.Message) == "" {
				return refuse(mpath, "message must not be empty")
			}
			if utf8.RuneCountInString(m.Message) > conversation.MaxMessageLength {
				return refuse(mpath, "message is longer than %d characters", conversation.MaxMessageLength)
			}
			if err := checkDate(mpath, "message_date", m.MessageDate); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkDate refuses a missing or negative Unix time.
func checkDate(path, field string, v *int64) error {
	if v == nil {
		return refuse(path, "%s is required", field)
	}
	if *v < 0 {
		return refuse(path, "%s must not be negative", field)
	}
	return nil
}

func (c *checker) checkReadState(f *File) error {
	// Participants of conversations that read_state names but the file does not define.
	var others []int64
	for _, rs := range f.ReadState {
		if _, inFile := c.fileConvs[rs.ConversationID]; !inFile && rs.ConversationID > 0 {
			others = append(others, rs.ConversationID)
		}
	}
	rows, err := pairs(c.tx, "SELECT conversation_id, user_id FROM conversation_participants WHERE conversation_id IN ?", others)
	if err != nil {
		return err
	}
	for _, p := range rows {
		if c.participants[p[0]] == nil {
			c.participants[p[0]] = map[int64]bool{}
		}
		c.participants[p[0]][p[1]] = true
	}
	type pair struct{ conv, user int64 }
	seen := map[pair]int{}
	for i, rs := range f.ReadState {
		path := fmt.Sprintf("read_state[%d]", i)
		if rs.ConversationID <= 0 {
			return refuse(path, "conversation_id must be a positive integer")
		}
		members, ok := c.participants[rs.ConversationID]
		if !ok {
			return refuse(path, "conversation_id %d does not exist", rs.ConversationID)
		}
		if rs.UserID <= 0 {
			return refuse(path, "user_id must be a positive integer")
		}
		if !members[rs.UserID] {
			return refuse(path, "user_id %d is not a participant of conversation %d", rs.UserID, rs.ConversationID)
		}
		if j, dup := seen[pair{rs.ConversationID, rs.UserID}]; dup {
			return refuse(path, "appears twice (also read_state[%d])", j)
		}
		seen[pair{rs.ConversationID, rs.UserID}] = i
		if err := checkDate(path, "last_read_date", rs.LastReadDate); err != nil {
			return err
		}
	}
	return nil
}

func (c *checker) checkAPIKeys(f *File) error {
	seen := map[string]int{}
	for i, k := range f.APIKeys {
		path := fmt.Sprintf("api_keys[%d]", i)
		if err := CheckKeyText(k.Key); err != nil {
			return refuse(path, "%s", err)
		}
		if j, dup := seen[k.Key]; dup {
			return refuse(path, "key appears twice (also api_keys[%d])", j)
		}
		seen[k.Key] = i
		var userID int64
		if k.UserID != nil {
			userID = *k.UserID
		}
		if err := checkKeyShape(k.Type, userID, k.UserID != nil, k.Scopes); err != nil {
			return refuse(path, "%s", err)
		}
		if k.UserID != nil {
			if err := c.userRef(path, "user_id", userID); err != nil {
				return err
			}
		}
		if k.ExpiresAt != nil && *k.ExpiresAt <= 0 {
			return refuse(path, "expires_at must be a positive Unix time or null")
		}
	}
	return nil
}

// CheckKeyText refuses a plain key that is too short, too long, or not made of visible ASCII
// (it travels in an HTTP header).
func CheckKeyText(key string) error {
	if len(key) < auth.MinKeyLength || len(key) > auth.MaxKeyLength {
		return fmt.Errorf("key must be %d to %d characters long", auth.MinKeyLength, auth.MaxKeyLength)
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x21 || key[i] > 0x7e {
			return fmt.Errorf("key must be visible ASCII characters only")
		}
	}
	return nil
}

// checkKeyShape checks a key's type, user and scopes; the CLI's `apikey create` uses it too.
func checkKeyShape(keyType string, userID int64, hasUser bool, scopes []string) error {
	switch keyType {
	case auth.TypeUser:
		if !hasUser || userID <= 0 {
			return fmt.Errorf("a user key needs a positive user_id")
		}
	case auth.TypeSuper, auth.TypeGuest:
		if hasUser {
			return fmt.Errorf("a %s key has no user_id", keyType)
		}
	default:
		return fmt.Errorf("type %q is not one of %s", keyType, strings.Join(auth.KnownTypes, ", "))
	}
	for j, s := range scopes {
		if !slices.Contains(auth.KnownScopes, s) {
			return fmt.Errorf("scope %q is not one of %s", s, strings.Join(auth.KnownScopes, ", "))
		}
		if slices.Contains(scopes[:j], s) {
			return fmt.Errorf("scope %q appears twice", s)
		}
	}
	return nil
}

// CheckKey checks a key's type, user and scopes (userID 0: none).
func CheckKey(keyType string, userID int64, scopes []string) error {
	return checkKeyShape(keyType, userID, userID != 0, scopes)
}

// chunk is how many ids go into one IN list (the inserts carry store.InsertBatch rows each).
const chunk = 500

func existing(tx *gorm.DB, query string, ids []int64) ([]int64, error) {
	var out []int64
	for part := range slices.Chunk(uniq(ids), chunk) {
		var got []int64
		if err := tx.Raw(query, part).Scan(&got).Error; err != nil {
			return nil, err
		}
		out = append(out, got...)
	}
	return out, nil
}

func pairs(tx *gorm.DB, query string, ids []int64) ([][2]int64, error) {
	var out [][2]int64
	for part := range slices.Chunk(uniq(ids), chunk) {
		rows, err := tx.Raw(query, part).Rows()
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var p [2]int64
			if err := rows.Scan(&p[0], &p[1]); err != nil {
				rows.Close()
				return nil, err
			}
			out = append(out, p)
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

func uniq(ids []int64) []int64 {
	out := slices.Clone(ids)
	slices.Sort(out)
	return slices.Compact(out)
}
