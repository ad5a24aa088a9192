"""A fake MCP-like tool set: 200 tools of the kinds a business deployment plugs in.

Names, descriptions and argument names are written the way real integrations
write them (tickets, CRM, calendar, drive, git, payments, …), so search_tools is
tested against realistic text, not against words chosen to match the queries.
Each tool records its calls and returns a line naming itself; its result counts
as third-party text (an integration's data), so a call taints the session.
"""

# The table's rows are data, one tool a line, easier to read unwrapped.
# ruff: noqa: E501

from __future__ import annotations

from typing import Any

from pydantic import Field, create_model

from wakeful.core.effects import Effect
from wakeful.core.tool import ToolArgs, ToolContext, ToolOutput

# group -> lines of "name | description | field, field"
TOOL_SET: dict[str, str] = {
    "tickets": """
create_ticket | Open a new support ticket with a subject, body and priority. | subject, body, priority
assign_ticket | Set the agent responsible for a support ticket. | ticket_id, assignee
close_ticket | Mark a support ticket as solved and notify the requester. | ticket_id, resolution
reopen_ticket | Reopen a solved support ticket. | ticket_id, reason
comment_on_ticket | Add a public reply or an internal note to a ticket. | ticket_id, text, internal
list_tickets | List support tickets filtered by status, queue or requester. | status, queue, requester
get_ticket | Fetch one support ticket with its full conversation. | ticket_id
set_ticket_priority | Change the priority (low, normal, high, urgent) of a ticket. | ticket_id, priority
tag_ticket | Add labels to a support ticket for reporting. | ticket_id, tags
merge_tickets | Merge duplicate support tickets into one. | source_id, target_id
""",
    "crm": """
create_contact | Add a person to the CRM with name, email and company. | name, email, company
update_contact | Change fields of an existing CRM contact. | contact_id, fields
find_contact | Search CRM contacts by name, email or phone number. | query
delete_contact | Remove a contact from the CRM permanently. | contact_id
create_deal | Open a sales opportunity with an amount and a stage. | title, amount, stage
move_deal_stage | Advance a sales opportunity to another pipeline stage. | deal_id, stage
list_deals | List sales opportunities in the pipeline by owner or stage. | owner, stage
log_call | Record a phone call with a contact in the CRM timeline. | contact_id, summary, duration_min
create_company | Add an organisation account to the CRM. | name, domain
list_company_contacts | List the people who work at a CRM company account. | company_id
""",
    "calendar": """
create_event | Put a meeting on a calendar with attendees, start and end time. | title, start, end, attendees
update_event | Move or edit an existing calendar meeting. | event_id, start, end, title
delete_event | Cancel a calendar meeting and notify its attendees. | event_id
list_events | List calendar meetings between two dates. | start, end, calendar
find_free_slot | Find a time when all given people are free for a meeting. | attendees, duration_min, within_days
respond_to_invite | Accept, decline or tentatively accept a meeting invitation. | event_id, response
create_calendar | Make a new shared calendar. | name, members
share_calendar | Give another person access to a calendar. | calendar_id, person, role
set_out_of_office | Turn on an out-of-office period with an automatic reply. | start, end, message
list_calendars | List the calendars you can see. |
""",
    "drive": """
upload_file | Store a local file in the shared drive folder. | path, folder_id
download_file | Copy a file from the shared drive to the workspace. | file_id, path
share_file | Give people view or edit access to a drive file. | file_id, people, role
search_drive | Search documents in the shared drive by title or content. | query
create_folder | Make a folder in the shared drive. | name, parent_id
move_drive_file | Move a drive file into another folder. | file_id, folder_id
delete_drive_file | Put a drive file in the trash. | file_id
list_folder | List the files in a drive folder. | folder_id
get_file_revisions | Show the version history of a drive document. | file_id
export_document | Export a drive document as PDF, DOCX or Markdown. | file_id, format
""",
    "git": """
create_branch | Create a git branch in a repository from a base ref. | repo, branch, base
open_pull_request | Open a pull request to merge a branch into another. | repo, head, base, title, body
merge_pull_request | Merge an approved pull request. | repo, number, method
list_pull_requests | List open pull requests of a repository. | repo, state, author
review_pull_request | Approve a pull request or request changes with comments. | repo, number, verdict, body
list_commits | Show the commit history of a branch. | repo, branch, limit
get_commit_diff | Show the changes introduced by one commit. | repo, sha
create_release | Tag a version and publish release notes. | repo, tag, notes
list_repositories | List the repositories of an organisation. | org
create_issue | File a bug or feature request in a repository's issue tracker. | repo, title, body, labels
""",
    "payments": """
create_invoice | Bill a customer: an invoice with line items, due date and currency. | customer_id, items, due_date, currency
send_invoice | Email an invoice to the customer with a payment link. | invoice_id
refund_payment | Return money for a completed charge, fully or in part. | payment_id, amount, reason
list_payments | List received payments by date range or customer. | customer_id, start, end
get_balance | Show the available and pending balance of the merchant account. |
create_subscription | Start recurring billing of a customer on a price plan. | customer_id, plan_id
cancel_subscription | Stop a customer's recurring billing at period end. | subscription_id
issue_credit_note | Reduce the amount owed on an invoice with a credit note. | invoice_id, amount
list_overdue_invoices | List invoices past their due date that are unpaid. | days_overdue
create_payment_link | Make a hosted checkout link for a one-off amount. | amount, currency, description
""",
    "chat": """
post_message | Post a message to a team chat channel. | channel, text
reply_in_thread | Reply inside a chat thread. | channel, thread_id, text
create_channel | Make a new team chat channel and invite members. | name, members, private
archive_channel | Archive a team chat channel that is no longer used. | channel
list_channels | List team chat channels you can join. | query
search_messages | Search the team chat history. | query, channel, author
set_status | Set your chat status text and emoji. | text, emoji, until
add_reaction | React to a chat message with an emoji. | channel, message_id, emoji
pin_message | Pin an important chat message in its channel. | channel, message_id
invite_to_channel | Add people to a team chat channel. | channel, people
""",
    "hr": """
request_time_off | Submit a vacation or sick leave request for approval. | start, end, kind, note
approve_time_off | Approve or reject an employee's leave request. | request_id, approve
list_employees | List employees by department or location. | department, location
get_employee | Show an employee's profile, manager and role. | employee_id
start_onboarding | Begin the onboarding checklist for a new hire. | name, start_date, role, manager
offboard_employee | Revoke access and start the leaving process for an employee. | employee_id, last_day
list_open_positions | List job openings the company is hiring for. | department
schedule_interview | Book an interview between a candidate and interviewers. | candidate_id, interviewers, start
submit_expense | File an expense claim with a receipt for reimbursement. | amount, currency, category, receipt_path
get_payslip | Fetch an employee's payslip for a month. | employee_id, month
""",
    "analytics": """
run_report | Run a saved analytics report and return its table. | report_id, start, end
query_metrics | Query a time series metric with filters and grouping. | metric, start, end, group_by
create_dashboard | Make a dashboard with charts of chosen metrics. | title, metrics
list_dashboards | List saved analytics dashboards. |
export_report_csv | Export a report's rows as a CSV file. | report_id, path
track_event | Send a product analytics event for a user. | user_id, event, properties
get_funnel | Compute conversion between steps of a signup or purchase funnel. | steps, start, end
cohort_retention | Compute how many users of each signup week keep coming back. | start, weeks
top_pages | List the most visited pages of the website. | start, end, limit
set_alert_threshold | Alert when a metric crosses a threshold. | metric, threshold, direction
""",
    "deploy": """
deploy_service | Roll out a build of a service to an environment. | service, version, environment
rollback_deploy | Return a service to its previous release. | service, environment
list_deployments | List recent rollouts of a service. | service, environment
get_build_status | Show whether a CI pipeline run passed or failed. | pipeline_id
restart_service | Restart the running instances of a service. | service, environment
scale_service | Change the number of instances of a service. | service, replicas
set_env_variable | Set a configuration variable of a service. | service, key, value
trigger_pipeline | Start a CI pipeline on a branch. | repo, branch
list_environments | List the deployment environments (staging, production). |
get_service_logs | Show recent log lines of a service. | service, environment, since
""",
    "monitoring": """
list_incidents | List open incidents and who is on call for them. | status, severity
acknowledge_alert | Acknowledge a paging alert so escalation stops. | alert_id
resolve_incident | Mark an incident as resolved with a summary. | incident_id, summary
create_incident | Declare an incident with a severity and a title. | title, severity, service
get_on_call | Show who is on call for a team right now. | team
silence_alert | Mute an alert rule for a while during maintenance. | rule_id, minutes
list_alert_rules | List the alert rules of a service. | service
get_uptime | Show the availability of a service over a period. | service, days
create_status_update | Post an update on the public status page. | incident_id, text
get_error_rate | Show the error rate of an endpoint. | service, endpoint, minutes
""",
    "inventory": """
check_stock | Show how many units of a product are in stock per warehouse. | sku
adjust_stock | Correct the stock count of a product after a count. | sku, warehouse, delta
create_purchase_order | Order goods from a supplier. | supplier_id, items
list_low_stock | List products below their reorder point. | warehouse
receive_shipment | Record goods received against a purchase order. | purchase_order_id, items
transfer_stock | Move units between warehouses. | sku, from_warehouse, to_warehouse, quantity
list_suppliers | List suppliers with their lead times. |
create_product | Add a product with a SKU and price to the catalogue. | sku, name, price
update_price | Change the price of a catalogue product. | sku, price
list_orders | List customer orders by status. | status, start, end
""",
    "travel": """
search_flights | Find flights between two airports on a date. | origin, destination, date
book_flight | Reserve a seat on a chosen flight. | flight_id, passenger
search_hotels | Find hotels in a city for given nights. | city, check_in, check_out
book_hotel | Reserve a hotel room. | hotel_id, check_in, check_out, guest
cancel_booking | Cancel a flight or hotel reservation. | booking_id
list_trips | List upcoming business trips. | traveller
get_trip_itinerary | Show all bookings of one trip. | trip_id
request_visa_letter | Ask for an invitation letter for a visa application. | traveller, country
rent_car | Reserve a rental car at a location. | location, pick_up, drop_off
get_travel_policy | Show the company's travel spending rules. |
""",
    "docs": """
create_page | Write a new page in the team wiki. | space, title, body
update_page | Edit the content of a wiki page. | page_id, body
search_wiki | Search the team wiki for pages about a topic. | query
list_spaces | List the spaces of the team wiki. |
get_page | Read a wiki page. | page_id
comment_on_page | Leave a comment on a wiki page. | page_id, text
archive_page | Archive an outdated wiki page. | page_id
get_page_history | Show who changed a wiki page and when. | page_id
create_template | Save a page template for the wiki. | name, body
move_page | Move a wiki page under another parent. | page_id, parent_id
""",
    "projects": """
create_task | Add a task to a project board with an owner and due date. | project, title, owner, due
complete_task | Mark a project task as done. | task_id
list_tasks | List tasks of a project by owner or status. | project, owner, status
update_task_due_date | Move the deadline of a project task. | task_id, due
create_project | Start a project board with members. | name, members
list_projects | List the project boards you belong to. |
add_task_dependency | Mark one task as blocked by another. | task_id, blocked_by
log_time | Record hours worked on a task. | task_id, hours, note
create_milestone | Add a milestone with a date to a project. | project, name, date
get_project_status | Summarise progress and risks of a project. | project
""",
    "marketing": """
create_campaign | Prepare an email newsletter campaign for a mailing list. | list_id, subject, body
schedule_campaign | Set when a newsletter campaign goes out. | campaign_id, send_at
list_subscribers | List the subscribers of a mailing list. | list_id
add_subscriber | Add an address to a mailing list. | list_id, email
unsubscribe | Remove an address from a mailing list. | list_id, email
get_campaign_stats | Show open and click rates of a sent campaign. | campaign_id
schedule_social_post | Queue a post for social media accounts. | accounts, text, publish_at
list_social_mentions | List recent mentions of the brand on social media. | since
create_landing_page | Build a landing page from a template. | title, template, url_slug
create_discount_code | Make a promotional discount code. | code, percent_off, expires
""",
    "security": """
list_users | List the accounts of the identity provider. | query
create_user | Create an account in the identity provider. | email, name, groups
disable_user | Lock an account so it can no longer sign in. | user_id
reset_password | Send a password reset link to a user. | user_id
add_user_to_group | Give a user the permissions of a group. | user_id, group
list_audit_log | Show security audit events: sign-ins, permission changes. | since, user_id
rotate_api_key | Replace an API key with a new one. | key_id
list_vulnerabilities | List open security findings of a scan. | severity, repo
enforce_mfa | Require two-factor authentication for a group. | group
revoke_sessions | Sign a user out of every device. | user_id
""",
    "legal": """
create_contract | Draft a contract from a template for a counterparty. | template, counterparty, terms
send_for_signature | Send a document to people for electronic signature. | document_id, signers
get_signature_status | Show who has signed a document. | envelope_id
list_contracts | List contracts by counterparty or renewal date. | counterparty, renews_before
archive_contract | File a signed contract. | contract_id
request_legal_review | Ask the legal team to review a document. | document_id, question
list_nda | List non-disclosure agreements in force. | counterparty
set_renewal_reminder | Get reminded before a contract renews. | contract_id, days_before
get_contract_terms | Summarise the key terms of a contract. | contract_id
terminate_contract | Give notice to end a contract. | contract_id, effective
""",
    "weather_maps": """
get_weather | Current weather and forecast for a place. | location, days
get_directions | Route and travel time between two places. | origin, destination, mode
geocode_address | Turn a street address into coordinates. | address
find_nearby | Find places of a kind near a location. | location, kind, radius_m
get_timezone | The time zone of a location. | location
get_air_quality | Air quality index for a place. | location
traffic_report | Current traffic on a route. | origin, destination
distance_matrix | Travel times between several origins and destinations. | origins, destinations
reverse_geocode | Turn coordinates into a street address. | lat, lon
static_map | Render a map image of a location. | location, zoom, path
""",
    "accounting": """
record_expense | Book an expense to a ledger account. | amount, account, date, memo
list_transactions | List bank transactions to reconcile. | account, start, end
reconcile_transaction | Match a bank transaction with a ledger entry. | transaction_id, entry_id
get_profit_and_loss | Profit and loss statement for a period. | start, end
get_balance_sheet | Balance sheet at a date. | date
create_journal_entry | Post a manual journal entry. | lines, date, memo
list_vendors | List the vendors the company pays. |
pay_bill | Pay a vendor bill from a bank account. | bill_id, account
close_month | Lock the books for a month. | month
get_tax_report | Prepare the VAT or sales tax report for a period. | start, end
""",
}


class FakeIntegrationTool:
    """One tool of the set: a name, a group, a description and string arguments."""

    read_only = True
    effect = Effect.READ
    timeout_s: float | None = 10.0

    def __init__(self, group: str, name: str, description: str, fields: list[str]) -> None:
        self.name, self.group, self.description = name, group, description
        definitions: dict[str, Any] = {
            field: (str | None, Field(default=None, description=field.replace("_", " ")))
            for field in fields
        }
        self.Args = create_model(f"{name}_args", __base__=ToolArgs, **definitions)
        self.calls: list[dict[str, Any]] = []

    async def run(self, args: Any, ctx: ToolContext) -> ToolOutput:
        self.calls.append(args.model_dump(exclude_none=True))
        return ToolOutput(f"{self.name} done", untrusted_source=f"integration {self.name}")


def fake_tool_set() -> list[FakeIntegrationTool]:
    tools = []
    for group, table in TOOL_SET.items():
        for line in table.strip().splitlines():
            name, description, fields = (part.strip() for part in line.split("|"))
            tools.append(
                FakeIntegrationTool(
                    group, name, description, [f.strip() for f in fields.split(",") if f.strip()]
                )
            )
    return tools
