//! What the task asks PostgreSQL outside the replication stream: the server's settings and the
//! user's rights, the captured tables and their columns, the publication and the slot.

use wharf_db_wire::postgres::{Connection, Lsn, PgError};

use crate::events::CatalogColumn;
use crate::settings::{Autocreate, Settings};

/// A PostgreSQL identifier, quoted.
pub fn quoted(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// A text literal.
pub fn literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

fn first(rows: Vec<Vec<Option<String>>>) -> Option<Vec<Option<String>>> {
    rows.into_iter().next()
}

/// Checks what change data capture needs of the server and the user; the message says what to
/// change in PostgreSQL.
pub fn check_server(db: &mut Connection, settings: &Settings) -> Result<(), String> {
    let row = first(
        db.simple(
            "SELECT current_setting('wal_level'), (SELECT rolreplication OR rolsuper FROM pg_catalog.pg_roles WHERE \
             rolname = current_user)",
        )
        .map_err(|e| e.to_string())?,
    )
    .unwrap_or_default();
    let wal_level = row.first().cloned().flatten().unwrap_or_default();
    if wal_level != "logical" {
        return Err(format!(
            "PostgreSQL at {}:{} runs with wal_level={wal_level}, and change data capture needs wal_level=logical: run \
             ALTER SYSTEM SET wal_level = logical (or set it in postgresql.conf) and restart the server",
            settings.host, settings.port
        ));
    }
    if row.get(1).cloned().flatten().as_deref() != Some("t") {
        return Err(format!(
            "the user {} may not read the replication stream: run ALTER ROLE {} REPLICATION (as a superuser), or sign \
             in as a user that has it (database.user)",
            settings.user,
            quoted(&settings.user)
        ));
    }
    Ok(())
}

/// Every table of the database outside PostgreSQL's own schemas, as (schema, table), sorted.
pub fn tables(db: &mut Connection) -> Result<Vec<(String, String)>, PgError> {
    let rows = db.simple(
        "SELECT n.nspname, c.relname FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = \
         c.relnamespace WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition AND n.nspname NOT IN ('pg_catalog', \
         'information_schema') AND n.nspname NOT LIKE 'pg\\_toast%' AND n.nspname NOT LIKE 'pg\\_temp%' AND NOT \
         (n.nspname = 'public' AND c.relname = 'spatial_ref_sys') ORDER BY 1, 2",
    )?;
    Ok(rows
        .into_iter()
        .filter_map(|r| match r.as_slice() {
            [Some(schema), Some(table)] => Some((schema.clone(), table.clone())),
            _ => None,
        })
        .collect())
}

/// The captured tables (those the include and exclude lists allow), in the order of the first
/// expression of `table.include.list` each matches, then by name.
pub fn captured(db: &mut Connection, settings: &Settings) -> Result<Vec<(String, String)>, PgError> {
    let mut tables: Vec<(String, String)> =
        tables(db)?.into_iter().filter(|(s, t)| is_captured(settings, s, t)).collect();
    tables.sort_by_key(|(s, t)| settings.tables.rank(&format!("{s}.{t}")));
    Ok(tables)
}

pub fn is_captured(settings: &Settings, schema: &str, table: &str) -> bool {
    settings.schemas.allows(schema) && settings.tables.allows(&format!("{schema}.{table}"))
}

/// A table's columns in order, with what the replication stream does not say: whether each may
/// be null, its place in the primary key, an enum's labels, its default (none for a domain's
/// column, as Debezium reads none).
pub fn columns(db: &mut Connection, schema: &str, table: &str) -> Result<Vec<CatalogColumn>, PgError> {
    let sql =
        "SELECT a.attname, CASE WHEN t.typtype = 'd' THEN t.typbasetype ELSE a.atttypid END, CASE WHEN t.typtype \
               = 'd' THEN t.typtypmod ELSE a.atttypmod END, a.attnotnull, t.typname, (SELECT string_agg(e.enumlabel, \
               ',' ORDER BY e.enumsortorder) FROM pg_catalog.pg_enum e WHERE e.enumtypid = a.atttypid), (SELECT \
               array_position(i.indkey::int2[], a.attnum) FROM pg_catalog.pg_index i WHERE i.indrelid = a.attrelid \
               AND i.indisprimary), CASE WHEN t.typtype = 'd' THEN NULL ELSE pg_catalog.pg_get_expr(d.adbin, \
               d.adrelid) END FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_type t ON t.oid = a.atttypid LEFT \
               JOIN pg_catalog.pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum WHERE a.attrelid = (SELECT c.oid FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = \
               c.relnamespace WHERE n.nspname = $1 AND c.relname = $2) AND a.attnum > 0 AND NOT a.attisdropped ORDER \
               BY a.attnum";
    let (rows, _) = db.execute(sql, &[Some(schema), Some(table)])?;
    Ok(rows
        .into_iter()
        .filter_map(|r| {
            let text = |i: usize| r.get(i).cloned().flatten();
            Some(CatalogColumn {
                name: text(0)?,
                type_oid: text(1)?.parse().ok()?,
                modifier: text(2)?.parse().ok()?,
                not_null: text(3).as_deref() == Some("t"),
                type_name: text(4).unwrap_or_default(),
                labels: text(5),
                key_position: text(6).and_then(|p| p.parse().ok()),
                default: text(7),
            })
        })
        .collect())
}

/// Makes or updates the publication as `publication.autocreate.mode` says.
pub fn ensure_publication(db: &mut Connection, settings: &Settings, publish: Option<&str>) -> Result<(), String> {
    let name = &settings.publication;
    let existing = first(
        db.execute("SELECT puballtables FROM pg_catalog.pg_publication WHERE pubname = $1", &[Some(name)])
            .map_err(|e| e.to_string())?
            .0,
    );
    let with = publish.map_or(String::new(), |p| format!(" WITH (publish = {})", literal(p)));
    let run = |db: &mut Connection, sql: String| -> Result<(), String> {
        db.simple(&sql).map(|_| ()).map_err(|e| {
            format!(
                "{sql} failed: {e}; give {} the right (ownership of the tables, or superuser for FOR ALL TABLES), or \
                 create the publication yourself and set publication.autocreate.mode=disabled",
                settings.user
            )
        })
    };
    // The captured tables: as pairs to compare, and as the list a statement names.
    let wanted = |db: &mut Connection| -> Result<(Vec<(String, String)>, String), String> {
        let mut tables = captured(db, settings).map_err(|e| e.to_string())?;
        if tables.is_empty() {
            return Err(format!(
                "publication.autocreate.mode=filtered, and no table of {} matches the include and exclude lists",
                settings.database
            ));
        }
        let list = tables.iter().map(|(s, t)| format!("{}.{}", quoted(s), quoted(t))).collect::<Vec<_>>().join(", ");
        tables.sort();
        Ok((tables, list))
    };
    match (existing, settings.autocreate) {
        (None, Autocreate::Disabled) => Err(format!(
            "the publication {name} does not exist in {} and publication.autocreate.mode=disabled: create it (CREATE \
             PUBLICATION {name} FOR ALL TABLES, or FOR TABLE …) or set publication.autocreate.mode",
            settings.database
        )),
        (None, Autocreate::AllTables) => run(db, format!("CREATE PUBLICATION {name} FOR ALL TABLES{with}")),
        (None, Autocreate::NoTables) => run(db, format!("CREATE PUBLICATION {name}{with}")),
        (None, Autocreate::Filtered) => {
            let (_, list) = wanted(db)?;
            run(db, format!("CREATE PUBLICATION {name} FOR TABLE {list}{with}"))
        }
        (Some(row), Autocreate::Filtered) => {
            if row.first().cloned().flatten().as_deref() == Some("t") {
                return Err(format!(
                    "the publication {name} publishes all tables, and publication.autocreate.mode=filtered would \
                     narrow it: drop it, or set publication.autocreate.mode=all_tables"
                ));
            }
            let (want, list) = wanted(db)?;
            let (rows, _) = db
                .execute(
                    "SELECT schemaname, tablename FROM pg_catalog.pg_publication_tables WHERE pubname = $1 ORDER BY \
                     schemaname, tablename",
                    &[Some(name)],
                )
                .map_err(|e| e.to_string())?;
            let mut have: Vec<(String, String)> = rows
                .into_iter()
                .filter_map(|r| match r.as_slice() {
                    [Some(schema), Some(table)] => Some((schema.clone(), table.clone())),
                    _ => None,
                })
                .collect();
            have.sort();
            if have != want {
                run(db, format!("ALTER PUBLICATION {name} SET TABLE {list}"))?;
            }
            Ok(())
        }
        (Some(_), _) => Ok(()),
    }
}

/// A replication slot as `pg_replication_slots` shows it.
#[derive(Debug, Clone)]
pub struct Slot {
    pub plugin: String,
    pub database: String,
    pub restart: Option<Lsn>,
    /// The process that streams from it now, if one does.
    pub active_pid: Option<String>,
}

pub fn slot(db: &mut Connection, name: &str) -> Result<Option<Slot>, PgError> {
    let (rows, _) = db.execute(
        "SELECT plugin, database, restart_lsn::text, active_pid::text FROM \
         pg_catalog.pg_replication_slots WHERE slot_name = $1",
        &[Some(name)],
    )?;
    Ok(first(rows).map(|r| {
        let text = |i: usize| r.get(i).cloned().flatten();
        Slot {
            plugin: text(0).unwrap_or_default(),
            database: text(1).unwrap_or_default(),
            restart: text(2).and_then(|l| l.parse().ok()),
            active_pid: text(3),
        }
    }))
}
