//! pgoutput's logical replication messages (protocol version 1), as PostgreSQL's built-in
//! output plugin writes them inside the replication stream's WAL data.

use wharf_db_wire::postgres::Lsn;

/// A column of a relation, as the stream describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    /// Part of the replica identity (by default the primary key).
    pub key: bool,
    pub name: String,
    pub type_oid: u32,
    /// The type modifier: a `numeric`'s precision and scale, a `varchar`'s length; -1 for none.
    pub modifier: i32,
}

/// A table, as the stream describes it before its first change (and again after it changes).
#[derive(Debug, Clone, PartialEq)]
pub struct Relation {
    pub oid: u32,
    pub schema: String,
    pub table: String,
    /// `d` default, `n` nothing, `f` full, `i` index.
    pub replica_identity: u8,
    pub columns: Vec<Column>,
}

/// One column's value in a change.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    Null,
    /// A TOASTed value the change did not touch: the stream leaves it out.
    Unchanged,
    /// The value in PostgreSQL's text form.
    Text(String),
}

/// A decoded message.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    Begin {
        final_lsn: Lsn,
        commit_micros: i64,
        xid: u32,
    },
    Commit {
        commit_lsn: Lsn,
        end_lsn: Lsn,
        commit_micros: i64,
    },
    Relation(Relation),
    /// A type outside pg_catalog (an enum, a domain): its name.
    Type {
        oid: u32,
        schema: String,
        name: String,
    },
    Insert {
        relation: u32,
        new: Vec<Cell>,
    },
    /// `old` is the key (replica identity default or index) or the whole old row (full), when
    /// the server sends it.
    Update {
        relation: u32,
        old: Option<Vec<Cell>>,
        new: Vec<Cell>,
    },
    Delete {
        relation: u32,
        old: Vec<Cell>,
    },
    Truncate {
        relations: Vec<u32>,
        cascade: bool,
        restart_identity: bool,
    },
    /// Origin and logical decoding messages: nothing to write.
    Other(u8),
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

fn bad(what: &str) -> String {
    format!("PostgreSQL sent a pgoutput {what} that does not parse")
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], String> {
        let slice = self.bytes.get(self.at..self.at.saturating_add(n)).ok_or_else(|| bad(what))?;
        self.at += n;
        Ok(slice)
    }
    fn u8(&mut self, what: &str) -> Result<u8, String> {
        Ok(self.take(1, what)?[0])
    }
    fn i16(&mut self, what: &str) -> Result<i16, String> {
        let b = self.take(2, what)?;
        Ok(i16::from_be_bytes([b[0], b[1]]))
    }
    fn i32(&mut self, what: &str) -> Result<i32, String> {
        let b = self.take(4, what)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn u32(&mut self, what: &str) -> Result<u32, String> {
        let b = self.take(4, what)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn i64(&mut self, what: &str) -> Result<i64, String> {
        let b = self.take(8, what)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(i64::from_be_bytes(a))
    }
    fn lsn(&mut self, what: &str) -> Result<Lsn, String> {
        Ok(Lsn(self.i64(what)? as u64))
    }
    fn string(&mut self, what: &str) -> Result<String, String> {
        let rest = self.bytes.get(self.at..).ok_or_else(|| bad(what))?;
        let end = rest.iter().position(|b| *b == 0).ok_or_else(|| bad(what))?;
        let text = String::from_utf8_lossy(&rest[..end]).into_owned();
        self.at += end + 1;
        Ok(text)
    }
    fn tuple(&mut self, what: &str) -> Result<Vec<Cell>, String> {
        let count = self.i16(what)?;
        let mut cells = Vec::with_capacity(count.max(0) as usize);
        for _ in 0..count {
            cells.push(match self.u8(what)? {
                b'n' => Cell::Null,
                b'u' => Cell::Unchanged,
                b't' | b'b' => {
                    let length = usize::try_from(self.i32(what)?).map_err(|_| bad(what))?;
                    Cell::Text(String::from_utf8_lossy(self.take(length, what)?).into_owned())
                }
                _ => return Err(bad(what)),
            });
        }
        Ok(cells)
    }
}

/// Decodes one message.
pub fn decode(bytes: &[u8]) -> Result<Message, String> {
    let mut r = Reader { bytes, at: 1 };
    let Some(tag) = bytes.first() else { return Err(bad("message")) };
    Ok(match tag {
        b'B' => Message::Begin { final_lsn: r.lsn("Begin")?, commit_micros: r.i64("Begin")?, xid: r.u32("Begin")? },
        b'C' => {
            r.u8("Commit")?;
            Message::Commit { commit_lsn: r.lsn("Commit")?, end_lsn: r.lsn("Commit")?, commit_micros: r.i64("Commit")? }
        }
        b'R' => {
            let what = "Relation";
            let oid = r.u32(what)?;
            let schema = r.string(what)?;
            let table = r.string(what)?;
            let replica_identity = r.u8(what)?;
            let count = r.i16(what)?;
            let mut columns = Vec::with_capacity(count.max(0) as usize);
            for _ in 0..count {
                let key = r.u8(what)? & 1 == 1;
                columns.push(Column { key, name: r.string(what)?, type_oid: r.u32(what)?, modifier: r.i32(what)? });
            }
            Message::Relation(Relation { oid, schema, table, replica_identity, columns })
        }
        b'Y' => Message::Type { oid: r.u32("Type")?, schema: r.string("Type")?, name: r.string("Type")? },
        b'I' => {
            let relation = r.u32("Insert")?;
            if r.u8("Insert")? != b'N' {
                return Err(bad("Insert"));
            }
            Message::Insert { relation, new: r.tuple("Insert")? }
        }
        b'U' => {
            let relation = r.u32("Update")?;
            let mut old = None;
            let mut marker = r.u8("Update")?;
            if marker == b'K' || marker == b'O' {
                old = Some(r.tuple("Update")?);
                marker = r.u8("Update")?;
            }
            if marker != b'N' {
                return Err(bad("Update"));
            }
            Message::Update { relation, old, new: r.tuple("Update")? }
        }
        b'D' => {
            let relation = r.u32("Delete")?;
            match r.u8("Delete")? {
                b'K' | b'O' => Message::Delete { relation, old: r.tuple("Delete")? },
                _ => return Err(bad("Delete")),
            }
        }
        b'T' => {
            let count = r.i32("Truncate")?;
            let options = r.u8("Truncate")?;
            let mut relations = Vec::new();
            for _ in 0..count.max(0) {
                relations.push(r.u32("Truncate")?);
            }
            Message::Truncate { relations, cascade: options & 1 != 0, restart_identity: options & 2 != 0 }
        }
        other => Message::Other(*other),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn s(text: &str) -> Vec<u8> {
        let mut v = text.as_bytes().to_vec();
        v.push(0);
        v
    }

    #[test]
    fn a_relation_and_an_update_with_its_old_key_decode() {
        let mut relation = vec![b'R'];
        relation.extend_from_slice(&16385u32.to_be_bytes());
        relation.extend(s("public"));
        relation.extend(s("orders"));
        relation.push(b'd');
        relation.extend_from_slice(&2i16.to_be_bytes());
        relation.push(1);
        relation.extend(s("id"));
        relation.extend_from_slice(&23u32.to_be_bytes());
        relation.extend_from_slice(&(-1i32).to_be_bytes());
        relation.push(0);
        relation.extend(s("note"));
        relation.extend_from_slice(&25u32.to_be_bytes());
        relation.extend_from_slice(&(-1i32).to_be_bytes());
        let Message::Relation(r) = decode(&relation).unwrap() else { panic!("not a relation") };
        assert_eq!((r.schema.as_str(), r.table.as_str(), r.columns.len()), ("public", "orders", 2));
        assert!(r.columns[0].key && !r.columns[1].key);

        let mut update = vec![b'U'];
        update.extend_from_slice(&16385u32.to_be_bytes());
        update.push(b'K');
        update.extend_from_slice(&2i16.to_be_bytes());
        update.push(b't');
        update.extend_from_slice(&1i32.to_be_bytes());
        update.push(b'7');
        update.push(b'n');
        update.push(b'N');
        update.extend_from_slice(&2i16.to_be_bytes());
        update.push(b't');
        update.extend_from_slice(&1i32.to_be_bytes());
        update.push(b'8');
        update.push(b'u');
        assert_eq!(
            decode(&update).unwrap(),
            Message::Update {
                relation: 16385,
                old: Some(vec![Cell::Text("7".into()), Cell::Null]),
                new: vec![Cell::Text("8".into()), Cell::Unchanged]
            }
        );
        assert!(decode(&update[..update.len() - 3]).is_err());
    }
}
