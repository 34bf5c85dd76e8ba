//! Writes one `put`'s rows into the database: makes and extends tables first (outside the
//! transaction), then every row in one transaction, committed before `put` returns, in as few
//! statements as the parameter limit and `batch.size` allow. A statement the server refuses is
//! tried again row by row under savepoints, so that only the refused rows go to the errant
//! record reporter. A lost connection or a timeout fails the put as retriable: the worker
//! delivers the batch again, and nothing committed is lost or doubled in upsert mode.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use wharf_sdk::{log, report_errant, ConnectorError, Level};

use crate::db::{DbError, Login, Param, Session, Sql, KEYS};
use crate::dialect::{ColumnDef, Dialect};
use crate::rows::{Cell, Op, Row, TableId};
use crate::settings::{Flavor, InsertMode, Settings};
use wharf_db_wire::net::Endpoint;

/// The longest statement sent to MariaDB: one protocol packet, and MariaDB's default
/// `max_allowed_packet` (16 MiB), with room to spare; a longer one is split in two.
const MAX_MARIADB_STATEMENT_BYTES: usize = 15 * 1024 * 1024;

/// Tables whose columns are remembered; more are looked up again.
const MAX_KNOWN_TABLES: usize = 1024;

/// A table's columns as the database has them (names as stored).
struct Known {
    columns: Vec<String>,
}

pub struct Writer {
    settings: Settings,
    dialect: Dialect,
    connection: Option<Session>,
    tables: HashMap<TableId, Known>,
    /// Puts in a row that failed on the connection or a timeout.
    failures: u32,
    last_failure: Option<Instant>,
    /// `statement_timeout` and `lock_timeout` of the session, below the call's deadline.
    statement_timeout_ms: u64,
    /// `application_name`: `wharf-jdbc-sink <connector>`, so that an operator sees whose
    /// session it is.
    application: String,
    /// Whether the open transaction has written nothing yet: a failed statement then needs no
    /// savepoint to go back to, as rolling the transaction back loses nothing.
    untouched: bool,
}

/// Why a put failed.
enum Failure {
    /// The connection or a timeout: try the whole put again later.
    Transient(String),
    /// The task cannot go on.
    Fatal(String),
}

impl From<DbError> for Failure {
    fn from(e: DbError) -> Self {
        match e.is_transient() {
            true => Failure::Transient(e.to_string()),
            false => Failure::Fatal(e.to_string()),
        }
    }
}

impl Writer {
    pub fn new(settings: Settings, connector: &str, call_timeout_ms: u64) -> Writer {
        // Cut on a character boundary within PostgreSQL's 63 bytes.
        let mut application = format!("wharf-jdbc-sink {connector}");
        while application.len() > 63 {
            application.pop();
        }
        Writer {
            application,
            dialect: Dialect::of(settings.url.driver),
            settings,
            connection: None,
            tables: HashMap::new(),
            failures: 0,
            last_failure: None,
            statement_timeout_ms: (call_timeout_ms * 6 / 10).max(100),
            untouched: false,
        }
    }

    /// Writes the rows, each table's in order, in one transaction.
    pub fn put(&mut self, rows: Vec<Row>) -> Result<(), ConnectorError> {
        if rows.is_empty() {
            return Ok(());
        }
        if let Some(last) = self.last_failure {
            let pause = Duration::from_millis(self.settings.retry_backoff_ms);
            if last.elapsed() < pause {
                return Err(ConnectorError::Retriable(format!(
                    "waiting {} ms after the last failure before writing to {} again",
                    (pause - last.elapsed()).as_millis(),
                    self.dialect.name()
                )));
            }
        }
        let started = Instant::now();
        let count = rows.len();
        let refused = REFUSED.with(std::cell::Cell::get);
        match self.write(rows) {
            Ok(()) => {
                let refused = REFUSED.with(std::cell::Cell::get).saturating_sub(refused);
                crate::metrics::put(count.saturating_sub(refused as usize), started.elapsed());
                self.failures = 0;
                self.last_failure = None;
                Ok(())
            }
            Err(Failure::Fatal(message)) => {
                self.rollback();
                Err(ConnectorError::Fatal(message))
            }
            Err(Failure::Transient(message)) => {
                if let Some(connection) = self.connection.take() {
                    connection.close();
                }
                self.tables.clear();
                self.failures += 1;
                self.last_failure = Some(Instant::now());
                let retries = self.settings.max_retries;
                if self.failures > retries {
                    return Err(ConnectorError::Fatal(format!(
                        "writing to {} failed {} times in a row, more than the {retries} retries allowed \
                         (flush.max.retries, or max.retries): {message}",
                        self.dialect.name(),
                        self.failures
                    )));
                }
                log(
                    Level::Warn,
                    &format!("writing to {} failed; the batch will be written again: {message}", self.dialect.name()),
                );
                Err(ConnectorError::Retriable(message))
            }
        }
    }

    pub fn close(&mut self) {
        if let Some(connection) = self.connection.take() {
            connection.close();
        }
    }

    fn rollback(&mut self) {
        if let Some(connection) = self.connection.as_mut() {
            if connection.run("ROLLBACK").is_err() {
                self.close();
            }
        }
    }

    fn connection(&mut self) -> Result<&mut Session, Failure> {
        if self.connection.is_none() {
            self.connection = Some(self.connect()?);
        }
        self.connection.as_mut().ok_or_else(|| Failure::Transient("no connection".into()))
    }

    fn connect(&self) -> Result<Session, Failure> {
        let s = &self.settings;
        let database = s.url.database.clone().unwrap_or_default();
        let mut last = String::new();
        for attempt in 0..s.connection_attempts.max(1) {
            if attempt > 0 {
                std::thread::sleep(Duration::from_millis(s.connection_backoff_ms.min(500)));
            }
            for server in &s.url.servers {
                let address = server.address();
                let login = Login {
                    endpoint: Endpoint {
                        host: &server.host,
                        port: server.port,
                        address: &address,
                        tls: s.tls.mode,
                        tls_setting: &s.tls.setting,
                        server_key: KEYS.server,
                    },
                    address: &address,
                    user: &s.user,
                    password: s.password.as_deref(),
                    database: &database,
                    application: &self.application,
                    // The statement timeout is 60% of the call's: a read waits a little longer.
                    timeout: Duration::from_millis(self.statement_timeout_ms * 4 / 3),
                    keys: &KEYS,
                    replication: false,
                };
                match Session::connect(self.dialect, &login) {
                    Ok(mut connection) => {
                        connection.run(&self.dialect.session_setup(self.statement_timeout_ms))?;
                        log(
                            Level::Info,
                            &format!(
                                "connected to {} {} at {address} as {}{}",
                                self.dialect.name(),
                                connection.server_version(),
                                s.user,
                                if connection.is_tls() { ", over TLS" } else { "" }
                            ),
                        );
                        return Ok(connection);
                    }
                    // A refused sign-in or a missing database does not mend by itself.
                    Err(DbError::SignIn(message)) => return Err(Failure::Fatal(message)),
                    Err(e) if e.is_transient() => last = e.to_string(),
                    Err(e) => return Err(Failure::Fatal(e.to_string())),
                }
            }
        }
        Err(Failure::Transient(last))
    }

    fn write(&mut self, rows: Vec<Row>) -> Result<(), Failure> {
        let quoting = self.settings.quoting;
        let dialect = self.dialect;
        let rows = self.prepare_tables(rows)?;
        if rows.is_empty() {
            return Ok(());
        }
        self.connection()?.run_ahead(dialect.begin())?;
        self.untouched = true;
        // Runs of rows of one table and one operation, in record order.
        let mut start = 0;
        while start < rows.len() {
            let end = rows[start..]
                .iter()
                .position(|r| r.table != rows[start].table || r.op != rows[start].op)
                .map_or(rows.len(), |p| start + p);
            let run = &rows[start..end];
            match run[0].op {
                Op::Truncate => {
                    let sql = dialect.truncate(quoting, &run[0].table);
                    self.untouched = false;
                    match dialect {
                        Dialect::Postgres => self.connection()?.run(&sql)?,
                        // MariaDB commits before a TRUNCATE: the rows before it are committed
                        // first, and the rest go into a transaction of their own.
                        Dialect::MariaDb => {
                            let connection = self.connection()?;
                            connection.run("COMMIT")?;
                            connection.run(&sql)?;
                            connection.run(dialect.begin())?;
                        }
                    }
                }
                Op::Delete => self.write_run(run, Statement::Delete)?,
                Op::Write => match self.settings.insert_mode {
                    InsertMode::Insert => self.write_run(run, Statement::Insert)?,
                    InsertMode::Upsert => self.write_run(&last_of_each_key(run), Statement::Upsert)?,
                    InsertMode::Update => self.write_run(run, Statement::Update)?,
                },
            }
            start = end;
        }
        self.connection()?.run("COMMIT")?;
        Ok(())
    }

    /// Makes missing tables and adds missing columns (as the config allows); rows whose table
    /// cannot take them go to the errant record reporter. Returns the rows to write.
    fn prepare_tables(&mut self, rows: Vec<Row>) -> Result<Vec<Row>, Failure> {
        let mut kept = Vec::with_capacity(rows.len());
        for row in rows {
            if row.op == Op::Truncate && !self.tables.contains_key(&row.table) && !self.exists(&row.table)? {
                continue;
            }
            match self.ensure_table(&row)? {
                Ok(()) => kept.push(row),
                Err(reason) => errant(&row, &reason)?,
            }
        }
        Ok(kept)
    }

    fn exists(&mut self, table: &TableId) -> Result<bool, Failure> {
        Ok(self.columns_of(table)?.is_some())
    }

    /// The table's columns, looked up once.
    fn columns_of(&mut self, table: &TableId) -> Result<Option<&Known>, Failure> {
        if !self.tables.contains_key(table) {
            let query = self.dialect.columns(table);
            let rows = self.connection()?.query(&query)?;
            if rows.is_empty() {
                return Ok(None);
            }
            if self.tables.len() >= MAX_KNOWN_TABLES {
                self.tables.clear();
            }
            let columns = rows.into_iter().filter_map(|r| r.into_iter().next().flatten()).collect();
            self.tables.insert(table.clone(), Known { columns });
        }
        Ok(self.tables.get(table))
    }

    /// Ok(Err(reason)) when the row cannot be written to its table.
    fn ensure_table(&mut self, row: &Row) -> Result<Result<(), String>, Failure> {
        if row.op == Op::Truncate {
            return Ok(Ok(()));
        }
        let flavor = self.settings.flavor;
        let quoting = self.settings.quoting;
        let dialect = self.dialect;
        let (create_key, evolve_key) = match flavor {
            Flavor::Debezium => ("schema.evolution=none", "schema.evolution=none"),
            Flavor::Confluent => ("auto.create=false", "auto.evolve=false"),
        };
        let place = format!("{}-{} offset {}", row.topic, row.partition, row.offset);
        let longest = match dialect {
            Dialect::Postgres => 63,
            Dialect::MariaDb => 64,
        };
        if row.table.name.len() > longest {
            return Ok(Err(format!(
                "the table name {} (for the record at {place}) is longer than the {longest} bytes {} keeps; shorten it \
                 with the table name format or a RegexRouter transform",
                row.table,
                dialect.name()
            )));
        }
        let Some(known) = self.columns_of(&row.table)? else {
            if row.op == Op::Delete {
                return Ok(Err(format!(
                    "the table {} does not exist, so the delete at {place} has no row to delete",
                    row.table
                )));
            }
            if !self.settings.create_tables {
                return Ok(Err(format!(
                    "the table {} for the record at {place} does not exist, and {create_key}: create the table, or let \
                     the sink create it ({})",
                    row.table,
                    match flavor {
                        Flavor::Debezium => "schema.evolution=basic",
                        Flavor::Confluent => "auto.create=true",
                    }
                )));
            }
            let columns: Vec<ColumnDef<'_>> = row
                .key
                .iter()
                .map(|cell| ColumnDef { cell, key: true })
                .chain(row.values.iter().map(|cell| ColumnDef { cell, key: false }))
                .collect();
            let sql = match dialect.create_table(flavor, quoting, &row.table, &columns) {
                Ok(sql) => sql,
                Err(reason) => return Ok(Err(format!("the record at {place}: {reason}"))),
            };
            match self.connection()?.run(&sql) {
                Ok(()) => log(Level::Info, &format!("created the table {} for topic {}", row.table, row.topic)),
                // Another task made it first.
                Err(e) if dialect.already_there(e.code()) => {}
                Err(e) if e.is_transient() => return Err(e.into()),
                Err(e) => {
                    return Ok(Err(format!(
                        "{} refused to create the table {} for the record at {place}: {e}{}",
                        dialect.name(),
                        row.table,
                        hstore_hint(&sql, &e)
                    )))
                }
            }
            self.tables.remove(&row.table);
            return Ok(Ok(()));
        };
        let missing: Vec<&Cell> = row
            .key
            .iter()
            .chain(&row.values)
            .filter(|cell| !known.columns.iter().any(|c| *c == dialect.stored_name(quoting, &cell.name)))
            .collect();
        if missing.is_empty() {
            return Ok(Ok(()));
        }
        let names: Vec<&str> = missing.iter().map(|c| c.name.as_str()).collect();
        if !self.settings.evolve_tables {
            return Ok(Err(format!(
                "the table {} lacks the columns {} that the record at {place} has, and {evolve_key}: add them, or let \
                 the sink add them ({})",
                row.table,
                names.join(", "),
                match flavor {
                    Flavor::Debezium => "schema.evolution=basic",
                    Flavor::Confluent => "auto.evolve=true",
                }
            )));
        }
        let columns: Vec<ColumnDef<'_>> = missing.into_iter().map(|cell| ColumnDef { cell, key: false }).collect();
        let sql = match dialect.add_columns(flavor, quoting, &row.table, &columns) {
            Ok(sql) => sql,
            Err(reason) => return Ok(Err(reason)),
        };
        match self.connection()?.run(&sql) {
            Ok(()) => log(Level::Info, &format!("added the columns {} to the table {}", names.join(", "), row.table)),
            Err(e) if dialect.already_there(e.code()) => {}
            Err(e) if e.is_transient() => return Err(e.into()),
            Err(e) => {
                return Ok(Err(format!(
                    "{} refused to add the columns {} to the table {} for the record at {place}: {e}{}",
                    dialect.name(),
                    names.join(", "),
                    row.table,
                    hstore_hint(&sql, &e)
                )))
            }
        }
        self.tables.remove(&row.table);
        Ok(Ok(()))
    }

    /// One run of rows (one table, one operation), in chunks; a chunk the server refuses is
    /// written again row by row, each under a savepoint.
    fn write_run(&mut self, run: &[Row], statement: Statement) -> Result<(), Failure> {
        let width = statement.width(&run[0]).max(1);
        let per_chunk = match statement {
            Statement::Update => 1,
            _ => self.settings.batch_size.min(self.dialect.max_parameters() / width).max(1),
        };
        let mut start = 0;
        while start < run.len() {
            // Rows of one chunk share their columns (the first row's).
            let shape = statement.columns(&run[start]);
            let end = run[start..]
                .iter()
                .take(per_chunk)
                .position(|r| statement.columns(r) != shape)
                .map_or((start + per_chunk).min(run.len()), |p| start + p);
            let chunk = &run[start..end];
            // What the transaction wrote before this chunk is kept by a savepoint; when it wrote
            // nothing yet, a failure rolls it back and begins another instead, two round trips
            // fewer for the usual put of one chunk.
            let guarded = !self.untouched;
            if guarded {
                self.connection()?.run("SAVEPOINT wharf_chunk")?;
            }
            let outcome = self.execute(chunk, statement);
            self.untouched = false;
            match outcome {
                Ok(()) if guarded => self.connection()?.run("RELEASE SAVEPOINT wharf_chunk")?,
                Ok(()) => {}
                Err(e) if e.is_transient() => return Err(e.into()),
                Err(e) => {
                    if guarded {
                        self.connection()?.run("ROLLBACK TO SAVEPOINT wharf_chunk")?;
                    } else {
                        let begin = self.dialect.begin();
                        let connection = self.connection()?;
                        connection.run("ROLLBACK")?;
                        connection.run(begin)?;
                    }
                    if chunk.len() == 1 {
                        errant(&chunk[0], &refused(self.dialect, &chunk[0], &e))?;
                        start = end;
                        continue;
                    }
                    for row in chunk {
                        self.connection()?.run("SAVEPOINT wharf_row")?;
                        match self.execute(std::slice::from_ref(row), statement) {
                            Ok(()) => {
                                self.connection()?.run("RELEASE SAVEPOINT wharf_row")?;
                            }
                            Err(e) if e.is_transient() => return Err(e.into()),
                            Err(e) => {
                                self.connection()?.run("ROLLBACK TO SAVEPOINT wharf_row")?;
                                errant(row, &refused(self.dialect, row, &e))?;
                            }
                        }
                    }
                }
            }
            start = end;
        }
        Ok(())
    }

    fn execute(&mut self, chunk: &[Row], statement: Statement) -> Result<(), DbError> {
        let first = &chunk[0];
        if statement == Statement::Update && first.values.is_empty() {
            return Ok(());
        }
        let sql = self.statement(chunk, statement)?;
        // A MariaDB statement past one packet is written in two halves.
        if self.dialect == Dialect::MariaDb && sql.text.len() > MAX_MARIADB_STATEMENT_BYTES {
            if chunk.len() == 1 {
                return Err(DbError::value(format!(
                    "the row of the record at {}-{} offset {} makes a statement of {} bytes, more than the {} MiB \
                     one statement to MariaDB may take",
                    first.topic,
                    first.partition,
                    first.offset,
                    sql.text.len(),
                    MAX_MARIADB_STATEMENT_BYTES >> 20
                )));
            }
            let (left, right) = chunk.split_at(chunk.len() / 2);
            self.execute(left, statement)?;
            return self.execute(right, statement);
        }
        let connection = self.connection.as_mut().ok_or_else(|| DbError::Connection("no connection".into()))?;
        connection.query(&sql)?;
        Ok(())
    }

    /// The statement for a chunk, its values made for their columns.
    fn statement(&self, chunk: &[Row], statement: Statement) -> Result<Sql, DbError> {
        let s = &self.settings;
        let (flavor, quoting, zone, dialect) = (s.flavor, s.quoting, &s.zone, self.dialect);
        let param = |cell: &Cell| -> Result<Param, DbError> {
            dialect
                .param(flavor, &cell.schema, &cell.value, zone)
                .map_err(|e| DbError::value(format!("the field {} {e}", cell.name)))
        };
        let first = &chunk[0];
        let key: Vec<&str> = first.key.iter().map(|c| c.name.as_str()).collect();
        let values: Vec<&str> = first.values.iter().map(|c| c.name.as_str()).collect();
        Ok(match statement {
            Statement::Insert | Statement::Upsert => {
                let columns: Vec<&str> = key.iter().chain(&values).copied().collect();
                let rows = chunk
                    .iter()
                    .map(|r| r.key.iter().chain(&r.values).map(param).collect::<Result<Vec<_>, _>>())
                    .collect::<Result<Vec<_>, _>>()?;
                let upsert = (statement == Statement::Upsert).then_some((key.as_slice(), values.as_slice()));
                dialect.insert(quoting, &first.table, &columns, rows, upsert)
            }
            Statement::Update => {
                let set = first
                    .values
                    .iter()
                    .map(|c| Ok((c.name.as_str(), param(c)?)))
                    .collect::<Result<Vec<_>, DbError>>()?;
                let at =
                    first.key.iter().map(|c| Ok((c.name.as_str(), param(c)?))).collect::<Result<Vec<_>, DbError>>()?;
                dialect.update(quoting, &first.table, set, at)
            }
            Statement::Delete => {
                let rows = chunk
                    .iter()
                    .map(|r| r.key.iter().map(param).collect::<Result<Vec<_>, _>>())
                    .collect::<Result<Vec<_>, _>>()?;
                dialect.delete(quoting, &first.table, &key, rows)
            }
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Statement {
    Insert,
    Upsert,
    Update,
    Delete,
}

impl Statement {
    /// Parameters per row.
    fn width(self, row: &Row) -> usize {
        match self {
            Statement::Delete => row.key.len(),
            _ => row.key.len() + row.values.len(),
        }
    }

    /// The column names a row brings, which the rows of one statement share.
    fn columns(self, row: &Row) -> Vec<&str> {
        let key = row.key.iter().map(|c| c.name.as_str());
        match self {
            Statement::Delete => key.collect(),
            _ => key.chain(row.values.iter().map(|c| c.name.as_str())).collect(),
        }
    }
}

/// The rows of a run with each key's last only: one upsert statement may not touch a row twice,
/// and the last record of a key is what an upsert of each in turn leaves.
fn last_of_each_key(run: &[Row]) -> Vec<Row> {
    let key_of = |row: &Row| -> Vec<String> { row.key.iter().map(|c| format!("{:?}", c.value)).collect() };
    let mut last: HashMap<Vec<String>, usize> = HashMap::with_capacity(run.len());
    for (i, row) in run.iter().enumerate() {
        last.insert(key_of(row), i);
    }
    run.iter().enumerate().filter(|(i, row)| last.get(&key_of(row)) == Some(i)).map(|(_, r)| r.clone()).collect()
}

/// What to do when PostgreSQL lacks the hstore type a map column needs (undefined_object).
fn hstore_hint(sql: &str, e: &DbError) -> &'static str {
    match e.code() == "42704" && sql.contains(" hstore") {
        true => {
            " (maps are written to hstore columns, as Debezium writes them: run CREATE EXTENSION hstore in the \
             database, or leave the map out with field.exclude.list)"
        }
        false => "",
    }
}

fn refused(dialect: Dialect, row: &Row, e: &DbError) -> String {
    format!(
        "{} refused the record at {}-{} offset {} for the table {}: {e}",
        dialect.name(),
        row.topic,
        row.partition,
        row.offset,
        row.table
    )
}

thread_local! {
    /// Rows reported as errant so far, so that a put knows how many it wrote.
    static REFUSED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Reports a row the sink could not write; with `errors.tolerance=none` that fails the task.
fn errant(row: &Row, reason: &str) -> Result<(), Failure> {
    REFUSED.with(|refused| refused.set(refused.get() + 1));
    crate::metrics::refused();
    report_errant(&row.topic, row.partition, row.offset, reason).map_err(|e| {
        Failure::Fatal(match e {
            ConnectorError::Fatal(m) | ConnectorError::Retriable(m) => m,
        })
    })
}
