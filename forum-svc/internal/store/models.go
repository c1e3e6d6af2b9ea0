package store

// The GORM models of the rows that are inserted many at a time (a seed file's, a new
// conversation's participants), with CreateInBatches and InsertBatch. Each holds the columns its
// inserts set; the others take their defaults. Ids are given, never generated: the tables' own
// identity columns number the rows the API creates (StartConversation, Reply).

// InsertBatch is how many rows one INSERT of CreateInBatches carries: 500 rows of at most seven
// columns stay far below the bound parameters a statement may have (32,766 on SQLite, 65,535 on
// PostgreSQL).
const InsertBatch = 500

// User is a row of users.
type User struct {
	UserID   int64  `gorm:"column:user_id;primaryKey;autoIncrement:false"`
	Username string `gorm:"column:username"`
}

// TableName implements GORM's tabler.
func (User) TableName() string { return "users" }

// Conversation is a row of conversations, as a seed file gives it: its aggregates (message
// count, first and last message) are computed from its messages afterwards.
type Conversation struct {
	ConversationID int64  `gorm:"column:conversation_id;primaryKey;autoIncrement:false"`
	Title          string `gorm:"column:title"`
	UserID         int64  `gorm:"column:user_id"`
}

// TableName implements GORM's tabler.
func (Conversation) TableName() string { return "conversations" }

// Participant is a row of conversation_participants: a user in a conversation, with their read
// date and the conversation's last_message_date (which orders the user's list).
type Participant struct {
	ConversationID  int64 `gorm:"column:conversation_id;primaryKey;autoIncrement:false"`
	UserID          int64 `gorm:"column:user_id;primaryKey;autoIncrement:false"`
	LastReadDate    int64 `gorm:"column:last_read_date"`
	LastMessageDate int64 `gorm:"column:last_message_date"`
}

// TableName implements GORM's tabler.
func (Participant) TableName() string { return "conversation_participants" }

// Message is a row of conversation_messages.
type Message struct {
	MessageID      int64  `gorm:"column:message_id;primaryKey;autoIncrement:false"`
	ConversationID int64  `gorm:"column:conversation_id"`
	UserID         int64  `gorm:"column:user_id"`
	Message        string `gorm:"column:message"`
	MessageParsed  string `gorm:"column:message_parsed"` // Message's HTML
	MessageDate    int64  `gorm:"column:message_date"`
	Position       int64  `gorm:"column:position"`
}

// TableName implements GORM's tabler.
func (Message) TableName() string { return "conversation_messages" }
